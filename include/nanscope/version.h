/* nanscope version: the one place the version is written down. */
#ifndef NANSCOPE_VERSION_H
#define NANSCOPE_VERSION_H
#define NANSCOPE_VERSION_MAJOR 0
#define NANSCOPE_VERSION_MINOR 1
#define NANSCOPE_VERSION_PATCH 0
#define NANSCOPE_VERSION_STRING "0.1.0"
#define NANSCOPE_LOG_SCHEMA "nanscope/1"
#endif
