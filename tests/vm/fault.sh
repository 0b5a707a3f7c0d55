#!/bin/sh
# Fault-injection pass of `cargo xtask test` (docs/stress.md), run by tests/vm/init.sh with the
# test build of streams.ko loaded, on the test kernel (CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC,
# CONFIG_FAULT_INJECTION_DEBUG_FS, CONFIG_FAULT_INJECTION_STACKTRACE_FILTER).
#
# The kernel's failslab (kmalloc, kmem_cache_alloc) and fail_page_alloc (alloc_pages) make
# allocations fail at random, restricted by their stack filter to allocations with a frame of
# our modules on the stack (require-start/require-end: the span of their memory in
# /proc/modules): the core's own allocations, and the kernel's when our code calls it (files,
# descriptors, wait queues…), in process context, softirq and the STREAMS run queue alike,
# sleeping allocations included. Then strtest (its cases fail, of course: only a hang
# counts) and a short strstress run, which checks every errno and the sequence numbers.
# Every failure must come back as an errno; an oops, a WARN, a KASAN or lockdep report, a
# leak (kmemleak, after this script) or a hang fails the run.
#
# strstress runs with the message block cache off (streams.ko's `strmblkcache`, writable while
# loaded; docs/stress.md): every message block is then a kmalloc and a kfree, so KASAN sees a
# use after free of any of them (a cached block is a live object to it), and failslab may fail
# the allocation of any block, not only of the cache's misses. strtest keeps the cache on: with
# it off strtest timed out (300 s) in case 35, "FIFO: data between openers", whose reader most
# likely waits for bytes a failed write never sends (docs/stress.md). Turned back as it was after strstress.
#
# Usage: fault.sh [PERCENT [STRSTRESS-CALLS]]
pct=${1:-5}
calls=${2:-200000}
D=/sys/kernel/debug
MODS="streams strattach strshim"

for f in failslab fail_page_alloc; do
	if [ ! -d $D/$f ]; then
		echo "fault.sh: $D/$f missing: the kernel lacks fault injection (CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC, CONFIG_FAULT_INJECTION_DEBUG_FS)"
		exit 1
	fi
done

# The span of our modules' memory: from the lowest base to the highest base + size. Module
# addresses are 0xffffffff........ on x86-64 (the module area), so the arithmetic is done on
# the low 32 bits (shell arithmetic is signed 64-bit).
lo=
hi=
while read -r name size _ _ _ addr _; do
	case " $MODS " in *" $name "*) ;; *) continue ;; esac
	top=$(echo "$addr" | cut -c3-10)
	if [ "$top" != ffffffff ]; then
		echo "fault.sh: $name at $addr: not in the module area (or addresses hidden)"
		exit 1
	fi
	b=$((0x$(echo "$addr" | cut -c11-18)))
	e=$((b + size))
	if [ -z "$lo" ] || [ "$b" -lt "$lo" ]; then lo=$b; fi
	if [ -z "$hi" ] || [ "$e" -gt "$hi" ]; then hi=$e; fi
done </proc/modules
if [ -z "$lo" ]; then
	echo "fault.sh: none of $MODS in /proc/modules"
	exit 1
fi
start=$(printf '0xffffffff%08x' "$lo")
end=$(printf '0xffffffff%08x' "$hi")
echo "fault.sh: failing $pct% of the allocations made under $start..$end ($MODS)"

CACHE=/sys/module/streams/parameters/strmblkcache
cache=$(cat $CACHE) || { echo "fault.sh: no $CACHE"; exit 1; }

# Off, then the filters, then on (probability last).
setup() {
	for f in failslab fail_page_alloc; do
		echo 0 >$D/$f/probability
		echo 1 >$D/$f/interval
		echo -1 >$D/$f/times
		echo 0 >$D/$f/space
		echo 0 >$D/$f/verbose
		echo N >$D/$f/task-filter
		echo 32 >$D/$f/stacktrace-depth
		echo "$start" >$D/$f/require-start
		echo "$end" >$D/$f/require-end
		echo N >$D/$f/ignore-gfp-wait
	done
	echo N >$D/failslab/cache-filter
	echo N >$D/fail_page_alloc/ignore-gfp-highmem
	echo 0 >$D/fail_page_alloc/min-order
}

off() {
	for f in failslab fail_page_alloc; do
		echo 0 >$D/$f/probability
	done
}

setup
# A finite budget, so that the number injected can be read back: times counts down.
budget=100000000
for f in failslab fail_page_alloc; do
	echo $budget >$D/$f/times
	echo "$pct" >$D/$f/probability
done
rc=0
t0=$(date +%s)
# strtest under faults: its cases fail with ENOSR and the like; only a hang (timeout) or a
# crash (killed by a signal) counts.
timeout 300 strtest >/tmp/fault-strtest.out 2>&1
st=$?
# `timeout` signals strtest only: a case's forked child (the `as nobody` ones) would live on,
# holding its Streams (and streams.ko, failing the rmmod after this script).
killall -KILL strtest 2>/dev/null
echo "fault.sh: strtest under faults: exit $st, $(grep -c '^ok' /tmp/fault-strtest.out) cases passed, $(grep -c '^not ok' /tmp/fault-strtest.out) failed ($(($(date +%s) - t0)) s)"
if [ "$st" = 124 ] || [ "$st" -gt 128 ]; then
	echo "fault.sh: strtest hung or crashed under faults (exit $st); its last lines:"
	tail -n 20 /tmp/fault-strtest.out
	rc=1
fi
t1=$(date +%s)
if echo 0 >$CACHE; then
	echo "fault.sh: message block cache off for strstress (was $cache)"
else
	echo "fault.sh: cannot turn the message block cache off"
	rc=1
fi
strstress -n "$calls" -p 4 -t 2 -s 7 --max-secs 150 --faults || rc=1
echo "fault.sh: strstress under faults: $(($(date +%s) - t1)) s"
echo "$cache" >$CACHE || rc=1
off
for f in failslab fail_page_alloc; do
	left=$(cat $D/$f/times)
	echo "fault.sh: $f injected $((budget - left)) failures"
done
exit $rc
