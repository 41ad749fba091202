// Files nanscope writes into directories other users may share (/tmp, a job's scratch):
// never through a link planted in the file's place, never into a file of another user, never
// creating a directory behind the user's back. And files it reads there (Triton's cache, XLA's
// dumps): regular files only, of a bounded size.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace nanscope {

enum class NewFile {
  exclusive,  // a new name (per pid, per event): O_CREAT | O_EXCL, so a planted file or link fails
  append,     // a log several processes may share: created or appended to, if it is the user's own
};

// An fd open for writing (O_APPEND for `append`), mode 0600 when created, O_NOFOLLOW and
// O_CLOEXEC. -1 with `error` naming the path and the reason otherwise: a link, a file that is
// not regular, one owned by another user, a missing directory (none is created).
int open_for_writing(const std::string& path, NewFile how, std::string* error);

// Writes all of `data` (retrying short writes and EINTR); false on an error.
bool write_all(int fd, std::string_view data);

// A new file holding `data` (open_for_writing exclusive); empty on success, else the message.
std::string write_new_file(const std::string& path, std::string_view data);

enum class BoundedRead : uint8_t { ok, missing, too_large, failed };
// Reads a regular file of at most `max` bytes into `out` (failed: not a regular file, or a short
// read; missing: it cannot be opened).
BoundedRead read_bounded(const std::string& path, std::size_t max, std::string& out);

}  // namespace nanscope
