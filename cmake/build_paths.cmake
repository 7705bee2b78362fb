# The paths of this checkout and build tree that tests and benchmarks use, declared in
# tests/harness/build_paths.h (gpunode::build_paths::kBinary and the others).
#
# Why not compile definitions: a definition that names the checkout's directory differs between
# two clones of the tree, and the compiler cache hashes definitions as written, so a clone in
# another directory compiled every test object again. Here the paths live in small sources that
# CMake writes into the build tree, kept out of the unity batches: the tests' own objects are the
# same in every clone.

# gpunode_add_build_paths_library(): the library gpunode_build_paths, which defines the paths
# every target may use.
function(gpunode_add_build_paths_library)
  set(content "// Written by CMake (cmake/build_paths.cmake).\n#include \"build_paths.h\"\n\n")
  string(APPEND content "namespace gpunode::build_paths {\n"
         "const char kBinary[] = \"${GPUNODE_TEST_BINARY}\";\n"
         "const char kSourceDir[] = \"${PROJECT_SOURCE_DIR}\";\n"
         "const char kFixturesDir[] = \"${PROJECT_SOURCE_DIR}/tests/fixtures\";\n"
         "const char kSimLibrary[] = \"$<TARGET_FILE:gpunode_sim>\";\n"
         "const char kSimProfilesDir[] = \"${PROJECT_SOURCE_DIR}/sim/profiles\";\n"
         "const char kSimFixtures[] = \"${PROJECT_SOURCE_DIR}/tests/fixtures/nvidia-smi-xml\";\n"
         "const char kMigFixtures[] = \"${PROJECT_SOURCE_DIR}/tests/fixtures/mig\";\n"
         "const char kClusterFixtures[] = \"${PROJECT_SOURCE_DIR}/tests/fixtures/cluster\";\n"
         "}  // namespace gpunode::build_paths\n")
  set(source ${CMAKE_CURRENT_BINARY_DIR}/build_paths.cc)
  file(GENERATE OUTPUT ${source} CONTENT "${content}")
  set_source_files_properties(${source} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  add_library(gpunode_build_paths STATIC ${source})
  target_include_directories(gpunode_build_paths PUBLIC ${PROJECT_SOURCE_DIR}/tests/harness)
endfunction()

# gpunode_build_paths(<target> [<name> <path>]...): gives <target> the paths of
# gpunode_build_paths, and defines each <name> the header declares for a target alone (kGoPeer
# and the others after "Given by the targets that need them") as <path>.
function(gpunode_build_paths target)
  target_link_libraries(${target} PRIVATE gpunode_build_paths)
  if(NOT ARGN)
    return()
  endif()
  set(content "// Written by CMake (cmake/build_paths.cmake): the paths of ${target} alone.\n")
  string(APPEND content "#include \"build_paths.h\"\n\nnamespace gpunode::build_paths {\n")
  set(paths ${ARGN})
  while(paths)
    list(POP_FRONT paths name value)
    string(APPEND content "const char ${name}[] = \"${value}\";\n")
  endwhile()
  string(APPEND content "}  // namespace gpunode::build_paths\n")
  set(source ${CMAKE_CURRENT_BINARY_DIR}/${target}_build_paths.cc)
  file(GENERATE OUTPUT ${source} CONTENT "${content}")
  set_source_files_properties(${source} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  target_sources(${target} PRIVATE ${source})
endfunction()
