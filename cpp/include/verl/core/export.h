// VERL_API marks what libverl exports: the classes and functions its public headers declare.
// Included by every public header that declares something compiled into libverl.
#pragma once

// libverl is compiled with -fvisibility=hidden -fvisibility-inlines-hidden (CMakeLists.txt), so
// its dynamic symbol table holds only what carries VERL_API: its API, not the thousands of
// LibTorch / nlohmann::json / yaml-cpp template instances its sources instantiate (which would
// otherwise interpose on, or be interposed by, other copies in the same process). On a class the
// attribute exports its out-of-line members, vtable and typeinfo: exceptions (verl/core/error.h)
// and polymorphic types must carry it so that catch-by-type and dynamic_cast work across the
// library boundary. Templates and inline functions need nothing: every includer instantiates them.
// Applications see the same attribute (on ELF and Mach-O there is no import/export distinction).
#if defined(__GNUC__) || defined(__clang__)
#define VERL_API __attribute__((visibility("default")))
#else
#define VERL_API
#endif
