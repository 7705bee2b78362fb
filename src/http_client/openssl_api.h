// OpenSSL's libssl (and the libcrypto it links), loaded when the node daemons' TLS needs it
// (http_client/tls_client.h says when). The binary links no OpenSSL: the node daemons that never
// need it should not map it, and the HTTP module (src/http/) loads the same shared copy when it
// serves TLS, so the process never holds two.
//
// Thread-safety: LoadOpenssl may be called from any thread; the table it returns is immutable.
#pragma once

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "core/loaded_library.h"

namespace gpunode::http_client {

struct OpensslApi {
  decltype(&OPENSSL_init_ssl) init_ssl;
  decltype(&TLS_client_method) tls_client_method;
  decltype(&SSL_CTX_new) ctx_new;
  decltype(&SSL_CTX_free) ctx_free;
  decltype(&SSL_CTX_ctrl) ctx_ctrl;
  decltype(&SSL_CTX_set_options) ctx_set_options;
  decltype(&SSL_CTX_set_verify) ctx_set_verify;
  decltype(&SSL_CTX_get_cert_store) ctx_get_cert_store;
  decltype(&SSL_CTX_set_default_verify_paths) ctx_set_default_verify_paths;
  decltype(&SSL_CTX_use_certificate) ctx_use_certificate;
  decltype(&SSL_CTX_use_PrivateKey) ctx_use_private_key;
  decltype(&SSL_CTX_check_private_key) ctx_check_private_key;
  decltype(&SSL_new) ssl_new;
  decltype(&SSL_free) ssl_free;
  decltype(&SSL_set_fd) set_fd;
  decltype(&SSL_ctrl) ssl_ctrl;
  decltype(&SSL_set1_host) set1_host;
  decltype(&SSL_get0_param) get0_param;
  decltype(&SSL_connect) connect;
  decltype(&SSL_read) read;
  decltype(&SSL_write) write;
  decltype(&SSL_get_error) get_error;
  decltype(&SSL_get_verify_result) get_verify_result;
  decltype(&SSL_shutdown) shutdown;
  // libcrypto
  decltype(&BIO_new_mem_buf) bio_new_mem_buf;
  decltype(&BIO_free) bio_free;
  decltype(&PEM_read_bio_X509) pem_read_x509;
  decltype(&PEM_read_bio_PrivateKey) pem_read_private_key;
  decltype(&X509_free) x509_free;
  decltype(&EVP_PKEY_free) pkey_free;
  decltype(&X509_STORE_add_cert) store_add_cert;
  decltype(&X509_VERIFY_PARAM_set1_ip_asc) param_set1_ip_asc;
  decltype(&X509_verify_cert_error_string) verify_error_string;
  decltype(&ERR_peek_last_error) err_peek_last_error;
  decltype(&ERR_error_string_n) err_error_string_n;
  decltype(&ERR_clear_error) err_clear_error;

  // The last queued OpenSSL error as text (empty if none); clears the queue.
  std::string LastError() const;

  // The entry points above are libssl's and libcrypto's for as long as this holds libssl.
  core::LoadedLibrary library;
};

// Loads libssl.so.3 (again: the dynamic linker counts the references) and initialises it; the
// error says which package to install. The table's owner keeps the library's reference.
absl::StatusOr<std::unique_ptr<const OpensslApi>> LoadOpenssl();

}  // namespace gpunode::http_client
