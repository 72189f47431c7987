# One place for warnings and sanitizers; every tandem target links tandem_options.
add_library(tandem_options INTERFACE)
# Host-compiler flags only: nvcc (CUDA sources) takes its own (src/devices/cuda/CMakeLists.txt).
target_compile_options(tandem_options INTERFACE
  $<$<COMPILE_LANGUAGE:C,CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wcast-align -Wimplicit-fallthrough -Werror>
  $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor>)
target_compile_definitions(tandem_options INTERFACE _GNU_SOURCE)
# Position-independent code (libtandem.so) without paying for interposition: calls within a library
# may be inlined and bound directly; only the exported C API is the library's interface.
target_compile_options(tandem_options INTERFACE $<$<COMPILE_LANGUAGE:C,CXX>:-fno-semantic-interposition>)

# Sanitizer builds compile at -O1 with line tables only (-g1, after the build type's -O2 -g: the last
# one counts). They exist to run the tests, and their reports still name functions, files and lines;
# -O2 -g took twice as long to compile (70 s against 32 s for tools/cmd_experiment_jpeg.cc with ASan),
# and the ASan build was half of `make test`'s 37 minutes. A directory option, so that the programs'
# directories can lower it again (tandem_program_codegen below).
if(NOT TANDEM_SANITIZE STREQUAL "")
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-O1> $<$<COMPILE_LANGUAGE:C,CXX>:-g1>)
endif()
if(TANDEM_SANITIZE STREQUAL "address")
  set(_san -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_compile_options(tandem_options INTERFACE $<$<COMPILE_LANGUAGE:C,CXX>:${_san}>)
  target_link_options(tandem_options INTERFACE ${_san})
  target_compile_definitions(tandem_options INTERFACE TANDEM_SANITIZED=1)
elseif(TANDEM_SANITIZE STREQUAL "thread")
  set(_san -fsanitize=thread -fno-omit-frame-pointer)
  # GCC warns that TSan does not model atomic_thread_fence. Our fences only order atomic accesses
  # (the Dekker handshakes of need-wakeup and waiters, the metrics seqlock), which TSan never reports
  # as races; the data they publish travels by release/acquire pairs, which TSan does model.
  target_compile_options(tandem_options INTERFACE $<$<COMPILE_LANGUAGE:C,CXX>:${_san} -Wno-tsan>)
  target_link_options(tandem_options INTERFACE ${_san})
  target_compile_definitions(tandem_options INTERFACE TANDEM_SANITIZED=1 TANDEM_TSAN=1)
elseif(NOT TANDEM_SANITIZE STREQUAL "")
  message(FATAL_ERROR "TANDEM_SANITIZE must be empty, 'address' or 'thread'")
endif()

# The programs that are not the library (tools/, bench/, tests/) call this for their directory.
# - The release build compiles them with line tables only (-g1 after the build type's -g: the last one
#   counts). Backtraces and sanitizer reports keep function, file and line; the full debug info of the
#   json, CLI11 and gtest templates every such file instantiates took a quarter of its compile time
#   (tools/cmd_chaos.cc 15.1 s, 10.6 s at -g1). libtandem and the daemon library keep -O2 -g.
# - The ASan and TSan builds compile them at -O0: the sanitizers watch the library and the daemon, at
#   -O1 (header-inline library code compiled into a program runs at -O0 there), and a program's own
#   code is only driving them. The templates of CLI11 and the json library
#   (merely including CLI11 instantiates its parser in each file) made these files most of the ASan
#   build's compile time, and -O0 about halves it (docs/results/build_time.md).
#   The fuzzing build keeps -O1: its targets are the loop that libFuzzer runs. CMake drops a repeated
#   option, so a program that needs -O1 back must say so after -O0 some other way (-O1 is already in
#   the list and a second one would be dropped).
set(TANDEM_PROGRAM_CODEGEN $<$<AND:$<CONFIG:RelWithDebInfo>,$<COMPILE_LANGUAGE:C,CXX>>:-g1>)
if(NOT TANDEM_SANITIZE STREQUAL "" AND NOT TANDEM_FUZZ)
  list(APPEND TANDEM_PROGRAM_CODEGEN $<$<COMPILE_LANGUAGE:C,CXX>:-O0>)
endif()
function(tandem_program_codegen)
  add_compile_options(${TANDEM_PROGRAM_CODEGEN})
endfunction()
# The same for a program's files in a library's directory: tandemd's main.cc, which only parses the
# command line (CLI11: 21 s in release at -O2 -g, 33 s under ASan) and calls the daemon library.
function(tandem_program_sources)
  set_source_files_properties(${ARGN} PROPERTIES COMPILE_OPTIONS "${TANDEM_PROGRAM_CODEGEN}")
endfunction()

# Fuzzing builds (clang): every library is instrumented for coverage, so libFuzzer sees into decode,
# the engine and the daemon, not only into the target's own file.
if(TANDEM_FUZZ)
  target_compile_options(tandem_options INTERFACE $<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>)
endif()
