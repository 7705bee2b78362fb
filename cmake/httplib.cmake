# gpunode_httplib: Debian's cpp-httplib, for the HTTP module (src/http/: the exporter's and the
# webhook's servers) and the tests' clients; the binary itself never links it. It is a compiled
# library whose class layout depends on these definitions, so every user must compile with exactly
# the ones the package was built with (see its .pc file). Its header includes zlib's, but only the
# shared library calls zlib and brings libz.so.1 itself: linking zlib here would copy the archive
# the dist build prefers into the module.
find_library(GPUNODE_HTTPLIB_LIBRARY cpp-httplib REQUIRED)
find_package(ZLIB REQUIRED)
add_library(gpunode_httplib INTERFACE)
target_compile_definitions(gpunode_httplib INTERFACE
  CPPHTTPLIB_OPENSSL_SUPPORT CPPHTTPLIB_ZLIB_SUPPORT CPPHTTPLIB_BROTLI_SUPPORT)
target_include_directories(gpunode_httplib INTERFACE ${ZLIB_INCLUDE_DIRS})
target_link_libraries(gpunode_httplib INTERFACE ${GPUNODE_HTTPLIB_LIBRARY}
  OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
