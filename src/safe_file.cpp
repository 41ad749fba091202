#include "safe_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace nanscope {

namespace {

std::string why_not(const std::string& path, int err) {
  if (err == ELOOP) return "'" + path + "' is a symbolic link (nanscope does not write through links)";
  if (err == EEXIST) return "'" + path + "' already exists (nanscope writes a new file under this name)";
  if (err == ENOENT) {
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      return "cannot create '" + path + "': directory '" + dir.string() + "' does not exist (nanscope creates no directories)";
  }
  return "cannot open '" + path + "': " + std::strerror(err);
}

}  // namespace

int open_for_writing(const std::string& path, NewFile how, std::string* error) {
  int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK;
  flags |= how == NewFile::exclusive ? O_EXCL : O_APPEND;
  const int fd = ::open(path.c_str(), flags, 0600);
  if (fd < 0) {
    if (error) *error = why_not(path, errno);
    return -1;
  }
  struct stat st{};
  std::string problem;
  if (::fstat(fd, &st) != 0) problem = "cannot stat '" + path + "': " + std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) problem = "'" + path + "' is not a regular file";
  else if (st.st_uid != ::geteuid()) problem = "'" + path + "' belongs to another user";
  if (!problem.empty()) {
    ::close(fd);
    if (error) *error = problem;
    return -1;
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(std::size_t(n));
  }
  return true;
}

std::string write_new_file(const std::string& path, std::string_view data) {
  std::string error;
  const int fd = open_for_writing(path, NewFile::exclusive, &error);
  if (fd < 0) return error;
  const bool ok = write_all(fd, data);
  const bool closed = ::close(fd) == 0;
  return ok && closed ? std::string() : "cannot write '" + path + "': " + std::strerror(errno);
}

BoundedRead read_bounded(const std::string& path, std::size_t max, std::string& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return BoundedRead::missing;
  struct stat st{};
  BoundedRead r = BoundedRead::ok;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    r = BoundedRead::failed;
  } else if (static_cast<uint64_t>(st.st_size) > max) {
    r = BoundedRead::too_large;
  } else {
    out.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < out.size()) {
      const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
      if (n <= 0) break;
      got += static_cast<std::size_t>(n);
    }
    if (got != out.size()) r = BoundedRead::failed;
  }
  ::close(fd);
  return r;
}

}  // namespace nanscope
