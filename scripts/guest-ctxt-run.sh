#!/bin/sh
# Run with: scripts/guest-profile.sh scripts/guest-ctxt-run.sh (perf is copied but not used).
# 1-byte and 64-byte plain STREAMS pipe, with hold, and Linux pipe: rate and context switches
# per run, with the default block limit (strmblkmax 1024) and with strmblkmax 65536 (one
# boot, alternating).
C="-q -r -t 1 -i 3 -m nullmod -p 0 -a -S10 --hiwat=65536 --lowat=8192 --csv"
run() {
	label=$1; shift
	c0=$(awk '/^ctxt/{print $2}' /proc/stat)
	row=$(perftest $C "$@" 2>/dev/null | tail -1)
	c1=$(awk '/^ctxt/{print $2}' /proc/stat)
	echo "RUN $label blk=$(cat /sys/module/streams/parameters/strmblkmax) ctxt=$((c1-c0)) $row"
}
sweep() {
	for rep in 1 2; do
		for s in 1 64; do
			run linux -s $s --pipe=linux
			run streams -s $s --pipe=streams
			run hold -s $s --pipe=streams -H -M -F -w
		done
	done
}
sweep
modprobe -r streams && modprobe streams strmblkmax=65536 || echo "reload failed"
sweep
