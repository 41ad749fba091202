"""One version for the helper and the library: where the package's comes from, and the check."""
import os


def version_from_header(path):
    """NANSCOPE_VERSION_STRING of include/nanscope/version.h, or None."""
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3 and parts[:2] == ["#define", "NANSCOPE_VERSION_STRING"]:
                    return parts[2].strip('"')
    except OSError:
        pass
    return None


def package_version(package_dir):
    """_version.py, written by the wheel build and by `cmake --install`, else (a source checkout)
    the header the library is built from."""
    try:
        from nanscope._version import version
        return version
    except ImportError:
        header = os.path.join(os.path.dirname(os.path.dirname(package_dir)), "include", "nanscope", "version.h")
        return version_from_header(header) or "unknown"


def check(package, library, path, package_dir):
    """A helper and a library of different versions may disagree on the C ABI: a clear error."""
    if library != package:
        raise RuntimeError(
            f"nanscope: version mismatch: the Python helper {package_dir} is {package}, but {path} is "
            f"libnanscope {library or '(no version)'}; use the helper and library of one install "
            f"(`nanscope -- python app.py` provides the launcher's own helper), or set NANSCOPE_LIBRARY to a "
            f"{package} library")
