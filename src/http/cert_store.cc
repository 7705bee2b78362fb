#include "http/cert_store.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace gpunode::http {
namespace {

constexpr std::chrono::seconds kCheckEvery(10);

}  // namespace

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

// Opens a PEM file for OpenSSL, or says why not in the system's words ("No such file or
// directory", "is a directory"), which OpenSSL's error queue would wrap in its own codes.
BIO* OpenPem(const std::string& path, std::string& why) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    why = "is a directory";
    return nullptr;
  }
  errno = 0;
  BIO* bio = BIO_new_file(path.c_str(), "r");
  if (bio == nullptr) {
    why = errno != 0 ? std::string("cannot open: ") + std::strerror(errno)
                     : "cannot open: " + OpenSslError();
    ERR_clear_error();
  }
  return bio;
}

// One certificate chain and key, read together so a rotation is never seen half-done.
class TlsMaterial {
 public:
  ~TlsMaterial() {
    X509_free(cert_);
    EVP_PKEY_free(key_);
    sk_X509_pop_free(chain_, X509_free);
  }

  static std::shared_ptr<TlsMaterial> Load(const TlsOptions& files, Result& result) {
    auto bad = [&result](std::string message) {
      result = {ErrorKind::kBadInput, std::move(message)};
      return nullptr;
    };
    auto m = std::shared_ptr<TlsMaterial>(new TlsMaterial());
    std::string why;
    BIO* bio = OpenPem(files.cert_file, why);
    if (bio == nullptr) return bad(files.cert_name + " " + files.cert_file + ": " + why);
    m->cert_ = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    m->chain_ = sk_X509_new_null();
    while (X509* extra = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
      sk_X509_push(m->chain_, extra);
    }
    BIO_free(bio);
    ERR_clear_error();  // the loop ends on an expected "no start line"
    if (m->cert_ == nullptr) {
      return bad(files.cert_name + " " + files.cert_file + ": no PEM certificate in it");
    }
    bio = OpenPem(files.key_file, why);
    if (bio == nullptr) return bad(files.key_name + " " + files.key_file + ": " + why);
    m->key_ = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (m->key_ == nullptr) {
      return bad(files.key_name + " " + files.key_file +
                 ": no PEM private key in it: " + OpenSslError());
    }
    if (X509_check_private_key(m->cert_, m->key_) != 1) {
      ERR_clear_error();
      return bad(files.key_name + " " + files.key_file + " does not belong to the certificate in " +
                 files.cert_file);
    }
    return m;
  }

  bool Apply(SSL* ssl) const {
    return SSL_use_cert_and_key(ssl, cert_, key_, chain_, /*override=*/1) == 1;
  }
  bool Apply(SSL_CTX* ctx) const {
    return SSL_CTX_use_cert_and_key(ctx, cert_, key_, chain_, /*override=*/1) == 1;
  }

 private:
  TlsMaterial() = default;
  X509* cert_ = nullptr;
  EVP_PKEY* key_ = nullptr;
  STACK_OF(X509) * chain_ = nullptr;
};

CertStore::CertStore(TlsOptions files, std::function<void(LogLevel, const std::string&)> log)
    : files_(std::move(files)), log_(std::move(log)) {}

CertStore::~CertStore() = default;

Result CertStore::LoadNow() {
  Result result;
  std::shared_ptr<TlsMaterial> m = TlsMaterial::Load(files_, result);
  if (m == nullptr) return result;
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::move(m);
  stamp_ = Stamp();
  checked_ = std::chrono::steady_clock::now();
  return result;
}

bool CertStore::Configure(SSL_CTX& ctx) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION);
  std::shared_ptr<const TlsMaterial> m = Current();
  if (m == nullptr || !m->Apply(&ctx)) return false;
  SSL_CTX_set_cert_cb(&ctx, UseCurrent, this);
  return true;
}

std::shared_ptr<const TlsMaterial> CertStore::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  auto now = std::chrono::steady_clock::now();
  if (now - checked_ < kCheckEvery) return current_;
  checked_ = now;
  std::string stamp = Stamp();
  if (stamp == stamp_) return current_;
  Result result;
  if (std::shared_ptr<TlsMaterial> m = TlsMaterial::Load(files_, result)) {
    current_ = std::move(m);
    stamp_ = stamp;
    if (log_) log_(LogLevel::kInfo, "loaded the rotated certificate from " + files_.cert_file);
  } else if (log_) {
    // Half-written files during a rotation: keep serving the old pair, retry later.
    log_(LogLevel::kWarning, "keeping the current certificate: " + result.message);
  }
  return current_;
}

// Modification time and inode of both files: a symlink swap changes the inode even when the
// times happen to match.
std::string CertStore::Stamp() const {
  std::string out;
  for (const std::string* path : {&files_.cert_file, &files_.key_file}) {
    struct stat st {};
    if (::stat(path->c_str(), &st) == 0) {
      out += std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec) + "/" +
             std::to_string(st.st_ino) + ";";
    }
  }
  return out;
}

int CertStore::UseCurrent(SSL* ssl, void* store) {
  std::shared_ptr<const TlsMaterial> m = static_cast<CertStore*>(store)->Current();
  return m && m->Apply(ssl) ? 1 : 0;
}

}  // namespace gpunode::http
