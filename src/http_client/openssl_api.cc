#include "http_client/openssl_api.h"

#include <dlfcn.h>

#include <type_traits>
#include <utility>

#include "core/text.h"

namespace gpunode::http_client {

std::string OpensslApi::LastError() const {
  unsigned long code = err_peek_last_error();
  err_clear_error();
  if (code == 0) return "";
  char text[256];
  err_error_string_n(code, text, sizeof text);
  return text;
}

absl::StatusOr<std::unique_ptr<const OpensslApi>> LoadOpenssl() {
  // RTLD_NODELETE: the last reference's dlclose leaves libssl mapped, as a linked library stays.
  // OpenSSL must not go while the process runs: every thread that used it holds state whose
  // destructor (a thread-specific key's) is libcrypto's code, and libcrypto cleans up at exit.
  // Debian's build marks both libraries NODELETE as well.
  absl::StatusOr<core::LoadedLibrary> library =
      core::LoadedLibrary::Open("libssl.so.3", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!library.ok()) {
    return absl::FailedPreconditionError(core::StrCat(
        "cannot load libssl.so.3 (", library.status().message(), "); install libssl3"));
  }
  auto loaded = std::make_unique<OpensslApi>();
  loaded->library = *std::move(library);
  const char* missing = nullptr;
  // libssl's handle also finds libcrypto's symbols: dlsym searches the dependencies too.
  auto resolve = [&](auto& entry, const char* name) {
    entry = loaded->library.Symbol<std::remove_reference_t<decltype(entry)>>(name);
    if (entry == nullptr && missing == nullptr) missing = name;
  };
  resolve(loaded->init_ssl, "OPENSSL_init_ssl");
  resolve(loaded->tls_client_method, "TLS_client_method");
  resolve(loaded->ctx_new, "SSL_CTX_new");
  resolve(loaded->ctx_free, "SSL_CTX_free");
  resolve(loaded->ctx_ctrl, "SSL_CTX_ctrl");
  resolve(loaded->ctx_set_options, "SSL_CTX_set_options");
  resolve(loaded->ctx_set_verify, "SSL_CTX_set_verify");
  resolve(loaded->ctx_get_cert_store, "SSL_CTX_get_cert_store");
  resolve(loaded->ctx_set_default_verify_paths, "SSL_CTX_set_default_verify_paths");
  resolve(loaded->ctx_use_certificate, "SSL_CTX_use_certificate");
  resolve(loaded->ctx_use_private_key, "SSL_CTX_use_PrivateKey");
  resolve(loaded->ctx_check_private_key, "SSL_CTX_check_private_key");
  resolve(loaded->ssl_new, "SSL_new");
  resolve(loaded->ssl_free, "SSL_free");
  resolve(loaded->set_fd, "SSL_set_fd");
  resolve(loaded->ssl_ctrl, "SSL_ctrl");
  resolve(loaded->set1_host, "SSL_set1_host");
  resolve(loaded->get0_param, "SSL_get0_param");
  resolve(loaded->connect, "SSL_connect");
  resolve(loaded->read, "SSL_read");
  resolve(loaded->write, "SSL_write");
  resolve(loaded->get_error, "SSL_get_error");
  resolve(loaded->get_verify_result, "SSL_get_verify_result");
  resolve(loaded->shutdown, "SSL_shutdown");
  resolve(loaded->bio_new_mem_buf, "BIO_new_mem_buf");
  resolve(loaded->bio_free, "BIO_free");
  resolve(loaded->pem_read_x509, "PEM_read_bio_X509");
  resolve(loaded->pem_read_private_key, "PEM_read_bio_PrivateKey");
  resolve(loaded->x509_free, "X509_free");
  resolve(loaded->pkey_free, "EVP_PKEY_free");
  resolve(loaded->store_add_cert, "X509_STORE_add_cert");
  resolve(loaded->param_set1_ip_asc, "X509_VERIFY_PARAM_set1_ip_asc");
  resolve(loaded->verify_error_string, "X509_verify_cert_error_string");
  resolve(loaded->err_peek_last_error, "ERR_peek_last_error");
  resolve(loaded->err_error_string_n, "ERR_error_string_n");
  resolve(loaded->err_clear_error, "ERR_clear_error");
  if (missing != nullptr) {
    return absl::FailedPreconditionError(core::StrCat("libssl.so.3 lacks ", missing));
  }
  if (loaded->init_ssl(0, nullptr) != 1) {
    return absl::FailedPreconditionError("OpenSSL failed to initialise");
  }
  return loaded;
}

}  // namespace gpunode::http_client
