# ccache for every C++ compile, keyed so that a fresh clone in another directory still hits the
# cache (paths relative to the source tree) and so that precompiled headers are cacheable.
find_program(VERL_CCACHE ccache)
if(VERL_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER
      ${CMAKE_COMMAND} -E env
      "CCACHE_BASEDIR=${CMAKE_SOURCE_DIR}"
      CCACHE_NOHASHDIR=1
      CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
      ${VERL_CCACHE})
endif()
