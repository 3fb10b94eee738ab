// SPDX-License-Identifier: GPL-2.0
/*
 * tbprof: a QEMU TCG plugin that counts, per guest kernel translation
 * block, how often it ran, how many instructions, memory accesses, atomic
 * instructions (LOCK prefix, XCHG with memory), interrupt flag changes
 * (CLI, STI, POPF) and fences (MFENCE, LFENCE, SFENCE) that made: the
 * last three are much dearer than their count under MTTCG. Under TCG the guest has no
 * PMU; this is the instruction-level profile (tests/bench/insn-profile.sh).
 *
 *   -plugin tbprof.so,mark=0xADDR,out=PREFIX
 *
 * Each time the guest executes the translation block starting at ADDR (a
 * kernel function the workload calls only as a marker, e.g. the sync
 * system call, with KASLR off), the counts so far are written to
 * PREFIX.N (N = 0, 1, ...) and reset. Lines: "vaddr execs insns mems
 * atomics irqflag fences", hexadecimal vaddr, only kernel addresses, only
 * blocks that ran.
 * Counters are plain adds from both vCPU threads: exact enough to compare.
 *
 *   -plugin tbprof.so,mark=0xADDR,out=PREFIX,phase=0xA1:1,phase=0xA2:2,...
 *
 * With phase markers, each vCPU is in a phase: 0 from its last user-mode
 * block on, N from the last block at AN it executed. Everything is then
 * counted per block and phase (lines get the phase as an eighth column),
 * with callbacks instead of inline adds: slower, but it splits a
 * message's kernel work into the parts of its critical path, e.g. the
 * doorbell system call up to tcp_sendmsg_locked, TCP and veth up to the
 * peer's tcp_read_sock, the peer's receive, and what follows.
 *
 * Built against the plugin API version 1 (QEMU 7.2); the few declarations
 * it needs are below, so no QEMU headers are required.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*vcpu_udata_cb)(unsigned int vcpu_index, void *userdata);
enum { CB_NO_REGS = 0 };
enum { INLINE_ADD_U64 = 0 };
enum { MEM_RW = 3 };
typedef void (*mem_cb)(unsigned int vcpu_index, uint32_t info, uint64_t vaddr, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, vcpu_udata_cb cb,
					  int flags, void *userdata);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, int op,
					      void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_mem_inline(struct qemu_plugin_insn *insn, int rw,
					  int op, void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_mem_cb(struct qemu_plugin_insn *insn, mem_cb cb, int flags,
				      int rw, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);

EXPORT int qemu_plugin_version = 1;

/* Counts of one block (in one phase). */
struct cnt {
	uint64_t execs, insns, mems, locks, irqf, fences;
};

#define NPH 8
#define NVCPU 64
#define NMARK 16

struct ent {
	uint64_t vaddr;
	struct cnt c[NPH];
	/* phase mode: the block's static counts, the phase it starts */
	uint64_t n, nk[3];
	int setph;
};

#define SLOT_BITS 18
#define SLOTS (1u << SLOT_BITS)
static struct ent *tab;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t mark;
static const char *out = "tbprof";
static unsigned int ndump;
static uint64_t mark_at[NMARK];
static int mark_ph[NMARK], nmarks;
static int phase[NVCPU];

static struct ent *lookup(uint64_t vaddr)
{
	uint64_t h = (vaddr * 0x9e3779b97f4a7c15ull) >> (64 - SLOT_BITS);
	unsigned int i;

	for (i = 0; i < SLOTS; i++) {
		struct ent *e = &tab[(h + i) & (SLOTS - 1)];

		if (e->vaddr == vaddr)
			return e;
		if (!e->vaddr) {
			e->vaddr = vaddr;
			return e;
		}
	}
	return NULL;
}

static void dump(unsigned int vcpu, void *u)
{
	char path[4096];
	FILE *f;
	unsigned int i;

	(void)vcpu;
	(void)u;
	pthread_mutex_lock(&lock);
	snprintf(path, sizeof(path), "%s.%u", out, ndump++);
	f = fopen(path, "w");
	for (i = 0; i < SLOTS; i++) {
		struct ent *e = &tab[i];
		int ph;

		for (ph = 0; ph < NPH && e->vaddr; ph++) {
			struct cnt *c = &e->c[ph];

			if (!c->execs && !c->mems)
				continue;
			if (f)
				fprintf(f, "%" PRIx64 " %" PRIu64 " %" PRIu64 " %" PRIu64
					" %" PRIu64 " %" PRIu64 " %" PRIu64, e->vaddr,
					c->execs, c->insns, c->mems, c->locks, c->irqf,
					c->fences);
			if (f && nmarks)
				fprintf(f, " %d", ph);
			if (f)
				fputc('\n', f);
			memset(c, 0, sizeof(*c));
		}
	}
	if (f)
		fclose(f);
	pthread_mutex_unlock(&lock);
}

enum kind { K_PLAIN, K_ATOMIC, K_IRQF, K_FENCE };

/* Classifies an instruction from its bytes (legacy prefixes skipped). */
static enum kind classify(const uint8_t *p, size_t n)
{
	size_t i = 0;
	bool lock = false;

	while (i < n && i < 4 &&
	       (p[i] == 0xf0 || p[i] == 0x66 || p[i] == 0x67 || p[i] == 0xf2 ||
		p[i] == 0xf3 || p[i] == 0x2e || p[i] == 0x3e || p[i] == 0x26 ||
		p[i] == 0x36 || p[i] == 0x64 || p[i] == 0x65)) {
		lock |= p[i] == 0xf0;
		i++;
	}
	if (lock)
		return K_ATOMIC;
	if (i < n && (p[i] & 0xf0) == 0x40) /* REX */
		i++;
	if (i >= n)
		return K_PLAIN;
	switch (p[i]) {
	case 0x86:
	case 0x87: /* XCHG r/m: atomic when the operand is memory */
		return i + 1 < n && (p[i + 1] >> 6) != 3 ? K_ATOMIC : K_PLAIN;
	case 0x9d: /* POPF */
	case 0xfa: /* CLI */
	case 0xfb: /* STI */
		return K_IRQF;
	case 0x0f:
		if (i + 2 < n && p[i + 1] == 0xae &&
		    (p[i + 2] == 0xf0 || p[i + 2] == 0xe8 || p[i + 2] == 0xf8))
			return K_FENCE;
		return K_PLAIN;
	default:
		return K_PLAIN;
	}
}

/* Phase mode: a user-mode block ends the vCPU's phase. */
static void user_exec(unsigned int vcpu, void *u)
{
	(void)u;
	if (vcpu < NVCPU)
		phase[vcpu] = 0;
}

/* Phase mode: a kernel block ran; a marker block first sets the phase. */
static void kern_exec(unsigned int vcpu, void *u)
{
	struct ent *e = u;
	struct cnt *c;

	if (vcpu >= NVCPU)
		return;
	if (e->setph)
		phase[vcpu] = e->setph;
	c = &e->c[phase[vcpu]];
	c->execs++;
	c->insns += e->n;
	c->locks += e->nk[0];
	c->irqf += e->nk[1];
	c->fences += e->nk[2];
}

static void kern_mem(unsigned int vcpu, uint32_t info, uint64_t vaddr, void *u)
{
	struct ent *e = u;

	(void)info;
	(void)vaddr;
	if (vcpu < NVCPU)
		e->c[phase[vcpu]].mems++;
}

static void trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t va = qemu_plugin_tb_vaddr(tb);
	size_t n = qemu_plugin_tb_n_insns(tb), i, nk[4] = { 0 };
	struct ent *e;
	int m;

	(void)id;
	if (va < 0xffff800000000000ull) {
		if (nmarks)
			qemu_plugin_register_vcpu_tb_exec_cb(tb, user_exec, CB_NO_REGS, NULL);
		return;
	}
	pthread_mutex_lock(&lock);
	e = lookup(va);
	pthread_mutex_unlock(&lock);
	if (!e)
		return;
	if (va == mark)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, dump, CB_NO_REGS, NULL);
	for (i = 0; i < n; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);

		nk[classify(qemu_plugin_insn_data(in), qemu_plugin_insn_size(in))]++;
		if (nmarks)
			qemu_plugin_register_vcpu_mem_cb(in, kern_mem, CB_NO_REGS, MEM_RW, e);
		else
			qemu_plugin_register_vcpu_mem_inline(in, MEM_RW, INLINE_ADD_U64,
							     &e->c[0].mems, 1);
	}
	if (nmarks) {
		e->n = n;
		e->nk[0] = nk[K_ATOMIC];
		e->nk[1] = nk[K_IRQF];
		e->nk[2] = nk[K_FENCE];
		for (m = 0; m < nmarks; m++)
			if (mark_at[m] == va)
				e->setph = mark_ph[m];
		qemu_plugin_register_vcpu_tb_exec_cb(tb, kern_exec, CB_NO_REGS, e);
		return;
	}
	qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, &e->c[0].execs, 1);
	qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, &e->c[0].insns, n);
	if (nk[K_ATOMIC])
		qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, &e->c[0].locks,
							 nk[K_ATOMIC]);
	if (nk[K_IRQF])
		qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, &e->c[0].irqf,
							 nk[K_IRQF]);
	if (nk[K_FENCE])
		qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64, &e->c[0].fences,
							 nk[K_FENCE]);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const void *info, int argc, char **argv)
{
	int i;

	(void)info;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "mark=", 5))
			mark = strtoull(argv[i] + 5, NULL, 0);
		else if (!strncmp(argv[i], "out=", 4))
			out = argv[i] + 4;
		else if (!strncmp(argv[i], "phase=", 6) && nmarks < NMARK) {
			char *end;

			mark_at[nmarks] = strtoull(argv[i] + 6, &end, 0);
			mark_ph[nmarks] = *end == ':' ? atoi(end + 1) : 0;
			if (mark_ph[nmarks] > 0 && mark_ph[nmarks] < NPH)
				nmarks++;
		}
	}
	tab = calloc(SLOTS, sizeof(*tab));
	if (!tab)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, trans);
	return 0;
}
