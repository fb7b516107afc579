#include <rte_errno.h>
#include <rte_lcore.h>

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
