# ccache for every C and C++ compile (C: the vendored PCRE2), keyed so that a fresh clone in another
# directory still hits the cache (paths relative to the source tree) and so that precompiled headers
# are cacheable.
find_program(VERL_CCACHE ccache)
if(VERL_CCACHE)
  set(_verl_ccache_launcher
      ${CMAKE_COMMAND} -E env
      "CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}"
      CCACHE_NOHASHDIR=1
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      ${VERL_CCACHE})
  foreach(lang C CXX)
    if(NOT CMAKE_${lang}_COMPILER_LAUNCHER)
      set(CMAKE_${lang}_COMPILER_LAUNCHER ${_verl_ccache_launcher})
    endif()
  endforeach()
endif()
