/* SPDX-License-Identifier: MIT OR Apache-2.0
 *
 * LD_PRELOAD shim for DPDK's mempool_perf_autotest (dpdk-test): the test
 * times every case for a fixed 5 s against rte_get_timer_hz(); this makes
 * that clock AUTOTEST_CLOCK_SCALE (default 20) times slower, so each case
 * runs 5 s / scale. The test then prints rates scale times too low;
 * bench/run.sh multiplies them back. Ratios between handlers are unchanged.
 * Build: cc -O2 -shared -fPIC -o autotest-clock.so autotest-clock.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

uint64_t rte_get_tsc_hz(void)
{
	static uint64_t (*real)(void);
	static uint64_t scale;

	if (real == NULL)
		real = (uint64_t (*)(void))dlsym(RTLD_NEXT, "rte_get_tsc_hz");
	if (scale == 0) {
		const char *s = getenv("AUTOTEST_CLOCK_SCALE");

		scale = s != NULL ? strtoull(s, NULL, 10) : 20;
		if (scale == 0)
			scale = 1;
	}
	return real() / scale;
}
