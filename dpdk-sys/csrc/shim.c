#include <stdint.h>

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_bus.h>
#include <rte_dev.h>
#include <rte_eal_memconfig.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_tailq.h>
#include <rte_telemetry.h>
#include <rte_version.h>
#include <rte_vfio.h>

#include "shim.h"

uint32_t rust_rte_lcore_id(void)
{
	return rte_lcore_id();
}

unsigned int rust_rte_socket_id(void)
{
	return rte_socket_id();
}

int rust_rte_errno(void)
{
	return rte_errno;
}

void rust_rte_errno_set(int value)
{
	rte_errno = value;
}

/*
 * The release-dependent corners of the DPDK API, one spelling for every
 * release the crate builds against (src/compat.rs is their Rust side). The
 * release is the one whose headers this file is compiled with.
 */

int dpdk_sys_tel_add_dict_uint(struct rte_tel_data *d, const char *name, uint64_t val)
{
#if RTE_VERSION >= RTE_VERSION_NUM(23, 3, 0, 0)
	return rte_tel_data_add_dict_uint(d, name, val);
#else
	return rte_tel_data_add_dict_u64(d, name, val);
#endif
}

int dpdk_sys_tel_add_dict_int(struct rte_tel_data *d, const char *name, int64_t val)
{
#if RTE_VERSION >= RTE_VERSION_NUM(23, 3, 0, 0)
	return rte_tel_data_add_dict_int(d, name, val);
#else
	/* 22.11 carries 32-bit signed values only. */
	int v = val > INT32_MAX ? INT32_MAX : val < INT32_MIN ? INT32_MIN : (int)val;

	return rte_tel_data_add_dict_int(d, name, v);
#endif
}

/*
 * rte_mbuf fields that sit inside anonymous unions from 24.07 on (bindgen
 * then names them __bindgen_anon_N.__bindgen_anon_1.field, N release
 * dependent); C spells them the same way in every release.
 */
uint16_t dpdk_sys_mbuf_data_off(const struct rte_mbuf *m)
{
	return m->data_off;
}

uint32_t dpdk_sys_mbuf_pkt_len(const struct rte_mbuf *m)
{
	return m->pkt_len;
}

uint16_t dpdk_sys_mbuf_data_len(const struct rte_mbuf *m)
{
	return m->data_len;
}

uint16_t dpdk_sys_mbuf_port(const struct rte_mbuf *m)
{
	return m->port;
}

/*
 * Runs fn(mp, arg) if mp is still on the mempool list, holding the lock
 * that rte_mempool_free takes to unlink a pool (the tailq lock, not the
 * mempool lock that rte_mempool_walk and rte_mempool_lookup take): while fn
 * runs, no rte_mempool_free of mp, in any process, can have begun, since
 * unlinking is its first step. mp is only compared, never read, unless
 * found. Returns 1 when found (fn ran), 0 when not.
 */
int dpdk_sys_mempool_listed_call(const struct rte_mempool *mp,
				 void (*fn)(struct rte_mempool *, void *), void *arg)
{
	struct rte_tailq_head *head;
	struct rte_tailq_entry *te;
	int found = 0;

	rte_mcfg_tailq_read_lock();
	head = rte_eal_tailq_lookup("RTE_MEMPOOL");
	if (head != NULL) {
		TAILQ_FOREACH(te, &head->tailq_head, next) {
			if (te->data == mp) {
				found = 1;
				fn((struct rte_mempool *)te->data, arg);
				break;
			}
		}
	}
	rte_mcfg_tailq_read_unlock();
	return found;
}

/*
 * The IOMMU group of a PCI device bound to vfio-pci, or 0. Such a device
 * without a driver-specific dma_map has its rte_dev_dma_map served by
 * DPDK's VFIO fallback on the default container (the PCI bus's
 * pci_dma_map): every such device shares that container's mappings.
 * rte_vfio_get_group_num() reads the group from sysfs; the driver link
 * says whether vfio-pci, not a kernel driver, holds the device.
 */
int dpdk_sys_dev_vfio_group(const struct rte_device *dev)
{
	static const char base[] = "/sys/bus/pci/devices";
	const char *name, *drv;
	char path[PATH_MAX], link[PATH_MAX];
	int group = 0;
	ssize_t n;

	if (dev == NULL || strcmp(rte_bus_name(rte_dev_bus(dev)), "pci") != 0)
		return 0;
	name = rte_dev_name(dev);
	if (snprintf(path, sizeof(path), "%s/%s/driver", base, name) >= (int)sizeof(path))
		return 0;
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = '\0';
	drv = strrchr(link, '/');
	drv = drv ? drv + 1 : link;
	if (strcmp(drv, "vfio-pci") != 0)
		return 0;
	if (rte_vfio_get_group_num(base, name, &group) <= 0)
		return 0;
	return group > 0 ? group : 0;
}

/*
 * rte_mempool_lookup without its race: DPDK's lookup walks the list under
 * the mempool lock while rte_mempool_free unlinks and frees the entry under
 * the tailq lock, so a lookup during a free can read a freed entry. This
 * walks under the tailq lock, and takes no other lock (the mempool lock
 * nested inside it would deadlock against rte_mempool_create_empty, which
 * takes the two the other way round). NULL when no pool has that name.
 */
struct rte_mempool *dpdk_sys_mempool_lookup_listed(const char *name)
{
	struct rte_tailq_head *head;
	struct rte_tailq_entry *te;
	struct rte_mempool *found = NULL;

	rte_mcfg_tailq_read_lock();
	head = rte_eal_tailq_lookup("RTE_MEMPOOL");
	if (head != NULL) {
		TAILQ_FOREACH(te, &head->tailq_head, next) {
			struct rte_mempool *mp = te->data;

			if (strncmp(name, mp->name, RTE_MEMPOOL_NAMESIZE) == 0) {
				found = mp;
				break;
			}
		}
	}
	rte_mcfg_tailq_read_unlock();
	return found;
}

/* rte_mempool_walk under the tailq lock (see dpdk_sys_mempool_lookup_listed):
 * fn(mp, arg) for every listed pool; fn must not take the tailq or the
 * mempool lock. */
void dpdk_sys_mempool_walk_listed(void (*fn)(struct rte_mempool *, void *), void *arg)
{
	struct rte_tailq_head *head;
	struct rte_tailq_entry *te;

	rte_mcfg_tailq_read_lock();
	head = rte_eal_tailq_lookup("RTE_MEMPOOL");
	if (head != NULL) {
		TAILQ_FOREACH(te, &head->tailq_head, next)
			fn((struct rte_mempool *)te->data, arg);
	}
	rte_mcfg_tailq_read_unlock();
}
