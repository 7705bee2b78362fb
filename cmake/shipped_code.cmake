# The product's code generated as it ships, in every tree built with the release compiler: the
# release tree (whose tests run it), the binary-only tree and the dist tree. The dist build differs
# from the release build only in how it links (cmake/static_dist.cmake: static archives, unused
# sections dropped, symbols stripped, its functions ordered); every object the dist binary links is
# compiled with the same command as in the release tree, so the compiler cache serves the dist
# build from the release build's objects (scripts/test.sh checks that the commands stay equal:
# scripts/lib/same_compiles.py). The trees under a sanitizer keep their own flags.

# Non-PIE: the node daemons' memory is mostly mapped code, and position-dependent code needs no
# relocations or GOT indirections for its own functions and data. The simulator and the HTTP
# module (shared libraries) keep -fPIC, which a later -fno-pie would cancel.
set(CMAKE_POSITION_INDEPENDENT_CODE OFF)
include(CheckPIESupported)
check_pie_supported(LANGUAGES C CXX)
add_compile_options("$<$<NOT:$<OR:$<BOOL:$<TARGET_PROPERTY:POSITION_INDEPENDENT_CODE>>,$<STREQUAL:$<TARGET_PROPERTY:TYPE>,SHARED_LIBRARY>>>:-fno-pie>")
# One section a function or object, so that the dist link can drop those the binary never calls.
add_compile_options(-ffunction-sections -fdata-sections)

# spdlog, fmt and toml++ compiled in from their headers instead of loaded as shared libraries:
# every role logs, and a shared library costs its relocations and the pages around them even when
# little of it runs (about 0.5 MiB in the idle device plugin for spdlog alone). A batch that logs
# compiles about a third longer so; the dist build then compiles nothing of its own.
get_target_property(spdlog_includes spdlog::spdlog_header_only INTERFACE_INCLUDE_DIRECTORIES)
add_library(gpunode_log_header_only INTERFACE)
target_compile_definitions(gpunode_log_header_only INTERFACE SPDLOG_FMT_EXTERNAL FMT_HEADER_ONLY=1)
target_include_directories(gpunode_log_header_only SYSTEM INTERFACE ${spdlog_includes})
target_link_libraries(gpunode_log_header_only INTERFACE Threads::Threads)
set(GPUNODE_LOG_LIBRARIES gpunode_log_header_only)
get_target_property(toml_includes tomlplusplus::tomlplusplus INTERFACE_INCLUDE_DIRECTORIES)
add_library(gpunode_toml_header_only INTERFACE)
target_include_directories(gpunode_toml_header_only SYSTEM INTERFACE ${toml_includes})
set(GPUNODE_TOML gpunode_toml_header_only)
