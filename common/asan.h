/* SPDX-License-Identifier: MIT */
/* asan.h: SU_ASAN, 1 when this file is compiled with AddressSanitizer
 * (GCC says so with __SANITIZE_ADDRESS__, clang with a feature test),
 * else 0: code that reads memory ASan must not check, or that leaves
 * memory to the process's exit, asks here. */
#ifndef STACKCAP_COMMON_ASAN_H
#define STACKCAP_COMMON_ASAN_H

#if defined(__SANITIZE_ADDRESS__)
#define SU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SU_ASAN 1
#endif
#endif
#ifndef SU_ASAN
#define SU_ASAN 0
#endif

#endif
