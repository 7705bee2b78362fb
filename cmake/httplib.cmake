# gpunode_httplib: Debian's cpp-httplib, for the exporter's and the webhook's HTTP servers and
# the tests' clients. It is a compiled library whose class layout depends on these definitions,
# so every user must compile with exactly the ones the package was built with (see its .pc file).
find_library(GPUNODE_HTTPLIB_LIBRARY cpp-httplib REQUIRED)
find_package(ZLIB REQUIRED)
add_library(gpunode_httplib INTERFACE)
target_compile_definitions(gpunode_httplib INTERFACE
  CPPHTTPLIB_OPENSSL_SUPPORT CPPHTTPLIB_ZLIB_SUPPORT CPPHTTPLIB_BROTLI_SUPPORT)
target_link_libraries(gpunode_httplib INTERFACE ${GPUNODE_HTTPLIB_LIBRARY}
  OpenSSL::SSL OpenSSL::Crypto ZLIB::ZLIB Threads::Threads)
