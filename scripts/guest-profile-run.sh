#!/bin/sh
# Guest side of scripts/guest-profile.sh: perf record -a -g (cpu-clock) of one perftest run per
# case, then the top symbols of the perftest processes (self and children) and the share of
# each command (swapper = idle vCPU). Options as in `cargo xtask bench` (xtask/src/bench.rs).
export LD_LIBRARY_PATH=/host/lib
P="/host/lib/ld-linux-x86-64.so.2 /host/perf"
echo 0 > /proc/sys/kernel/kptr_restrict
echo -1 > /proc/sys/kernel/perf_event_paranoid
PT=$(command -v perftest)
prof() {
	name=$1; shift
	echo "######## $name: $*"
	$P record -q -e cpu-clock -a -g -o /tmp/perf.data -- "$PT" "$@" --csv 2>&1 | tail -1
	echo "=== flat (self), perftest"
	$P report -i /tmp/perf.data --no-children --comm perftest --sort sym -g none --stdio 2>/dev/null | grep "%" | head -45
	echo "=== children, perftest"
	$P report -i /tmp/perf.data --children --comm perftest --sort sym -g none --stdio 2>/dev/null | grep "%" | head -45
	echo "=== by comm"
	$P report -i /tmp/perf.data --no-children --sort comm -g none --stdio 2>/dev/null | grep "%" | head -8
}
C="-q -r -t 1 -i 2 -m nullmod -p 0 -a -S10 --hiwat=65536 --lowat=8192"
for s in 1 4096; do
	prof "pipe linux $s" $C -s $s --pipe=linux
	prof "pipe streams $s" $C -s $s --pipe=streams
done
prof "pipe streams+H+w+F+M 1" $C -s 1 --pipe=streams -H -M -F -w
prof "putmsg 16" $C -s 16 --pipe=streams --putmsg
U="-q -r -t 1 -i 2 -s 64 --bufsize=131071"
prof "udp socket 64" $U --udp=socket
prof "udp tpi 64" $U --udp=tpi
