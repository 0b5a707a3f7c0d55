#!/bin/sh
# Guest /init (busybox sh), put in the initramfs by `cargo xtask`. The mode comes from the kernel
# command line (`rstreams.mode=test|vm|probe`). Markers the host reads (xtask/src/ktap.rs):
#   RSTREAMS-STEP <name> rc=<n>   one step of the test run (non-zero fails the run)
#   RSTREAMS-END rc=<n>           the test run finished (missing = failure)
#   RSTREAMS-VM-START / RSTREAMS-EXIT rc=<n>   around the user command of `cargo xtask vm`
export PATH=/usr/bin:/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
ip link set lo up 2>/dev/null
mode=probe
KMEMLEAK=/sys/kernel/debug/kmemleak
for a in $(cat /proc/cmdline); do
	case "$a" in
	rstreams.mode=*) mode=${a#rstreams.mode=} ;;
	rstreams.noleakscan) KMEMLEAK=/nonexistent ;; # the negative control only needs the KUnit verdict
	esac
done
fail=0

step() {
	name=$1
	shift
	echo "RSTREAMS-STEP-BEGIN $name"
	"$@"
	rc=$?
	echo "RSTREAMS-STEP $name rc=$rc"
	[ "$rc" = 0 ] || fail=1
}

unload() {
	modprobe -r streams && ! grep -q '^streams ' /proc/modules
}

leaks() {
	# kmemleak only reports objects older than 5 s, and a second scan drops transient ones.
	sleep 6
	echo scan > $KMEMLEAK
	echo scan > $KMEMLEAK
	# (debugfs files report size 0: read the contents, do not test the size)
	report=$(cat $KMEMLEAK)
	if [ -n "$report" ]; then
		echo "RSTREAMS-KMEMLEAK: leaks reported:"
		echo "$report"
		# Report each leak once: later scans show only new ones.
		echo clear > $KMEMLEAK
		return 1
	fi
	echo "no leaks reported"
}

case "$mode" in
probe)
	echo RSTREAMS-PROBE-OK
	;;
test)
	echo "RSTREAMS-BEGIN $(uname -r) cpus=$(grep -c ^processor /proc/cpuinfo)"
	# Forget boot-time objects: only leaks from our modules and tests matter.
	[ -e $KMEMLEAK ] && echo clear > $KMEMLEAK
	step depmod depmod
	# Loading runs every KUnit suite of the module (results on the console as KTAP).
	step modprobe modprobe streams
	# STREAMS devices end to end from user space (tests/vm/strtest), with the module loaded once.
	[ -x /usr/bin/strtest ] && step strtest strtest
	# Pipe conformance, Linux pipes and STREAMS pipes (tests/vm/pipetest).
	[ -x /usr/bin/pipetest ] && step pipetest pipetest --linux-only
	# Scan while the module is loaded (backtraces name its functions), then after unloading
	# (memory the module did not give back at exit).
	[ -e $KMEMLEAK ] && step kmemleak-loaded leaks
	step rmmod unload
	[ -e $KMEMLEAK ] && step kmemleak-unloaded leaks
	for s in /tests/vm/suites/*.sh; do
		[ -e "$s" ] || continue
		step "suite-$(basename "$s" .sh)" sh "$s"
	done
	[ -e $KMEMLEAK ] && step kmemleak-final leaks
	echo "RSTREAMS-END rc=$fail"
	;;
vm)
	depmod && modprobe streams || echo "RSTREAMS: loading streams.ko failed"
	cd /host 2>/dev/null || cd /
	echo RSTREAMS-VM-START
	sh -c "$(cat /etc/rstreams/cmd)"
	echo "RSTREAMS-EXIT rc=$?"
	;;
*)
	echo "RSTREAMS: unknown mode $mode"
	;;
esac
sync
reboot -f
