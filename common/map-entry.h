/* SPDX-License-Identifier: MIT */
/*
 * map-entry.h: one executable range of a process as recorded, the type the
 * trace model (trace/trace-model.h) holds and debuginfo/ opens modules by.
 * Here, below both, so debuginfo/ need not include trace/.
 */
#ifndef STACKCAP_COMMON_MAP_ENTRY_H
#define STACKCAP_COMMON_MAP_ENTRY_H

#include <stdint.h>

#define SU_BUILD_ID_MAX 64

/* Flags of a maps entry (docs/trace-format.md, `maps` event). */
enum {
	SU_MAP_ANON = 1u << 0, /* anonymous/JIT code: no file */
	SU_MAP_MAIN = 1u << 1, /* the main executable */
	SU_MAP_VDSO = 1u << 2, /* [vdso] */
	/* A file mapping whose load bias was not recorded (perf.data: the
	 * kernel gives file offsets): BIAS is START - OFFSET until debuginfo/
	 * reads the file it found (su_module_bias).  Never in a trace. */
	SU_MAP_FILE_BIAS = 1u << 3,
	/* A [vdso] with no build-id, recorded on this machine's kernel
	 * release (perf.data): debuginfo/ takes its own vDSO as the
	 * recording's (su_module.file_id).  Never in a trace. */
	SU_MAP_THIS_KERNEL = 1u << 4,
};

/* One executable range of a process, as recorded. */
struct su_map_entry {
	uint64_t start, end;   /* [start, end) */
	uint64_t offset;       /* file offset mapped at start */
	uint64_t bias;         /* load bias: ELF address = pc - bias */
	uint32_t flags;        /* SU_MAP_* */
	uint8_t build_id_len;  /* 0: none recorded */
	uint8_t build_id[SU_BUILD_ID_MAX];
	char *path;            /* recorded path ("" for anonymous) */
	/* The mapped file's device and inode, as the kernel's records give
	 * them when they give no build-id (a live recording: a file is
	 * told at its path by them once its process is gone); 0: not
	 * known. */
	uint64_t dev, ino;
};

#endif
