# The distributed build (GPUNODE_STATIC_DIST): the node daemons' memory is mostly mapped code, so
# the shipped binary links gRPC, protobuf, abseil and their helpers from Debian's own static
# archives, non-PIE, with unused sections dropped and symbols stripped. glibc (libdl, pthread) stays
# dynamic so that dlopen of libnvidia-ml.so.1 works. Its code is compiled as in the release tree
# (cmake/shipped_code.cmake: non-PIE, a section per function, spdlog, fmt and toml++ from their
# headers): only the link is the dist build's own.
#
# What stays shared, and why:
# - OpenSSL: Debian ships cpp-httplib and libcurl only as shared libraries, and both load libssl.so.3
#   and libcrypto.so.3; a static copy in the binary would be a second OpenSSL in the same process.
#   The binary links neither: the exporter and the webhook load their HTTP server, the module
#   libgpunode-http.so next to the binary (src/http/: cpp-httplib and OpenSSL), on first use.
# - zlib is linked from its archive (gRPC's message compression calls it), although cpp-httplib and
#   libcurl load libz.so.1 beside it: zlib keeps no global state, and the binary exports none of its
#   symbols, so each caller uses its own copy and no stream crosses between them.
# - libcurl: libcurl.a needs nghttp2, rtmp, ssh2, psl, gssapi, ldap and zstd, none of which has an
#   archive in Debian. The API client loads the shared libcurl on first use (src/kube/client.cc).
#   The node daemons' small HTTP/1.1 client speaks TLS through mbedTLS, whose archives are
#   linked in (src/http_client/CMakeLists.txt), and loads the shared libssl, the copy the HTTP
#   module uses, only where mbedTLS cannot serve (src/http_client/tls_client.h).
# - simdjson, cpp-httplib: Debian has no archives of them. (spdlog, fmt and toml++ have none
#   either, but they are compiled in from their headers: cmake/shipped_code.cmake.)
# - libstdc++: those C++ libraries (and the simulator) load the shared one anyway.

# gpunode_prefer_archive(<imported target>...): points each target at the .a next to its shared
# library (and each -lNAME it lists at libNAME.a). A target without an archive keeps its location,
# so the link still succeeds and `ldd` shows what stayed shared.
function(gpunode_prefer_archive)
  foreach(target ${ARGN})
    if(NOT TARGET ${target})
      continue()
    endif()
    get_target_property(type ${target} TYPE)
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
      set(properties IMPORTED_LOCATION)
      if(configs)
        foreach(config ${configs})
          string(TOUPPER ${config} config)
          list(APPEND properties IMPORTED_LOCATION_${config})
        endforeach()
      endif()
      foreach(property ${properties})
        get_target_property(location ${target} ${property})
        if(location MATCHES "^(.*)\\.so(\\.[0-9.]+)?$")
          set(archive ${CMAKE_MATCH_1}.a)
          if(EXISTS ${archive})
            set_target_properties(${target} PROPERTIES ${property} ${archive})
          endif()
        endif()
      endforeach()
    endif()
    get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
    if(links)
      set(rewritten)
      foreach(link ${links})
        if(link MATCHES "^-l(.+)$")
          find_library(archive_${CMAKE_MATCH_1} lib${CMAKE_MATCH_1}.a)
          if(archive_${CMAKE_MATCH_1})
            set(link ${archive_${CMAKE_MATCH_1}})
          endif()
        endif()
        list(APPEND rewritten ${link})
      endforeach()
      set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${rewritten}")
    endif()
  endforeach()
endfunction()

# Found here rather than in proto/ so that the rewritten targets are the ones every directory sees.
find_package(Protobuf REQUIRED)
find_package(gRPC CONFIG REQUIRED)

# The simulator is a shared library and Debian's libyaml-cpp.a is not position-independent, so the
# simulator keeps the shared yaml-cpp under its own name.
find_library(GPUNODE_SHARED_YAML_CPP_LIBRARY libyaml-cpp.so REQUIRED)
add_library(gpunode_shared_yaml_cpp SHARED IMPORTED)
set_target_properties(gpunode_shared_yaml_cpp PROPERTIES
  IMPORTED_LOCATION ${GPUNODE_SHARED_YAML_CPP_LIBRARY}
  INTERFACE_INCLUDE_DIRECTORIES "$<TARGET_PROPERTY:yaml-cpp,INTERFACE_INCLUDE_DIRECTORIES>")
set(GPUNODE_SIM_YAML_CPP gpunode_shared_yaml_cpp)

# The binary speaks gRPC only over unix sockets with insecure credentials (kubelet, pod-resources,
# containerd), so it links gRPC's unsecure build: no TLS, ALTS or xDS code registered at start.
# Using secure credentials would fail to link here, not fail at run time.
set(GPUNODE_GRPC_CXX gRPC::grpc++_unsecure)

get_property(imported DIRECTORY PROPERTY IMPORTED_TARGETS)
list(FILTER imported INCLUDE REGEX "^absl::")
gpunode_prefer_archive(${imported} gRPC::grpc++_unsecure gRPC::grpc_unsecure gRPC::gpr gRPC::upb
                       gRPC::address_sorting c-ares::cares re2::re2 protobuf::libprotobuf yaml-cpp)
# zlib as well, for gRPC's message compression (why a second copy beside the shared one is harmless:
# "What stays shared" above).
gpunode_prefer_archive(ZLIB::ZLIB)

# gpunode_dist_executable(<target>): links the shipped binary without unused sections, non-PIE,
# stripped, without shared libraries it does not call, and with its functions in the order of
# cmake/dist_symbol_order.txt.
#
# Why the order: the kernel maps a process's code from the file 64 KiB at a time around each page
# it touches (fault-around), so code that runs is resident with its neighbours. In the order the
# compiler and the archives leave it, the device plugin's start and idle loop touch about 1.2 MiB
# of functions spread over 3-5 MiB of the binary, and all of that stays resident. lld places the
# functions that the device plugin, then the exporter, were seen to run (bench/symbol_order.sh
# records them) next to each other, and the rest after them: the idle plugin's resident code
# drops from 4.4-4.8 MiB to 3.3-3.6 MiB (docs/PERFORMANCE.md, "mbedTLS for the API server, and the
# functions in the order they run"). Names the file lists that the binary no longer has are
# skipped, so a stale file costs memory, never the build.
set(GPUNODE_DIST_SYMBOL_ORDER ${PROJECT_SOURCE_DIR}/cmake/dist_symbol_order.txt)
function(gpunode_dist_executable target)
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE OFF)
  target_link_options(${target} PRIVATE -fuse-ld=lld -Wl,--gc-sections -Wl,--as-needed
                      -Wl,--symbol-ordering-file=${GPUNODE_DIST_SYMBOL_ORDER}
                      -Wl,--no-warn-symbol-ordering)
  if(NOT GPUNODE_DIST_KEEP_SYMBOLS)
    target_link_options(${target} PRIVATE -s)
  endif()
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${GPUNODE_DIST_SYMBOL_ORDER})
endfunction()
