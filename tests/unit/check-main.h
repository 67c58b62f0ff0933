/* SPDX-License-Identifier: MIT */
/* check-main.h: a main() that runs one Check suite and reports TAP on
 * stdout, one line per test case, for automake's tap-driver. */
#ifndef STACKCAP_CHECK_MAIN_H
#define STACKCAP_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

#define CHECK_MAIN(suite_fn)                                \
	int main(void)                                      \
	{                                                   \
		SRunner *sr = srunner_create(suite_fn());   \
		srunner_set_tap(sr, "-");                   \
		srunner_run_all(sr, CK_SILENT);             \
		int const failed = srunner_ntests_failed(sr); \
		srunner_free(sr);                           \
		(void)failed;                               \
		return 0; /* the TAP lines carry the verdicts */ \
	}

#endif
