#!/bin/sh
# Shell pipelines over Linux pipes and over STREAMS pipes (LD_PRELOAD=libstreams_pipe.so),
# compared byte for byte. busybox is static and cannot be interposed, so the pipelines are run
# by dash (dynamically linked; the initramfs carries it and its libraries) whose pipe() calls
# the interposer turns into STREAMS pipes; the stages are busybox applets that only read and
# write the descriptors they inherit. Fails (never skips) when the STREAMS pipe device or the
# interposition is missing: a run where the preload silently fell back to Linux pipes would
# compare Linux with Linux.
#
# MODE=linux-only (development, while the STREAMS pipe driver is not ready): the Linux runs
# alone, and the interposer must fall back to Linux pipes with streams.ko not loaded (device
# absent). MODE=full: both, compared. Switch by editing the next line.
MODE=full
set -u
DASH=/usr/bin/dash
PRELOAD=/usr/lib/libstreams_pipe.so
DEV=/dev/streams/clone/pipe
W=/tmp/pipeline
LIMIT=120
failed=0

fail() {
	echo "pipeline: FAIL: $*"
	failed=1
}

# Kill what a timed-out pipeline left behind (stages blocked on a STREAMS pipe end).
reap() {
	for p in /proc/[0-9]*; do
		[ "${p#/proc/}" = $$ ] && continue
		ls -l $p/fd 2>/dev/null | grep -q streams/clone/pipe && kill -9 "${p#/proc/}" 2>/dev/null
	done
	sleep 1
}

die() {
	echo "pipeline: FAIL: $*"
	reap
	exit 1
}

[ -x $DASH ] || die "$DASH missing from the initramfs"
[ -e $PRELOAD ] || die "$PRELOAD missing from the initramfs"
$DASH -c 'exit 0' || die "dash does not run (shared libraries missing?)"
if [ $MODE = linux-only ]; then
	echo "pipeline: MODE=linux-only: STREAMS pipe runs not done"
	# The fallback check needs the device absent (development mode only: /init reloads
	# nothing afterwards, and its unload step then finds the module gone).
	modprobe -r streams 2>/dev/null
	[ -e $DEV ] && die "$DEV present with streams.ko unloaded?"
	is=$(LD_PRELOAD=$PRELOAD $DASH -c 'echo x | pipetest --isastream 0')
	[ "$is" = 0 ] || die "no device, yet the preloaded pipe is a Stream? ($is)"
	kinds=linux
else
	kinds="linux streams"
	# /init runs this suite with streams.ko loaded (a reload would run KUnit again).
	modprobe streams || die "modprobe streams"
	[ -e $DEV ] || die "$DEV absent: no STREAMS pipe driver"
fi

mkdir -p $W || die "mkdir $W"
if [ $MODE = full ]; then
	# Which kind of pipe does a dash pipeline get? The last stage asks isastream() on its
	# stdin (pipe ends may be named pipe:[N] either way, so the name does not tell).
	is_linux=$($DASH -c 'echo x | pipetest --isastream 0')
	is_streams=$(LD_PRELOAD=$PRELOAD $DASH -c 'echo x | pipetest --isastream 0')
	is_off=$(STREAMS_PIPE=0 LD_PRELOAD=$PRELOAD $DASH -c 'echo x | pipetest --isastream 0')
	echo "pipeline: isastream(pipe end): plain dash $is_linux, preloaded $is_streams, STREAMS_PIPE=0 $is_off ($(LD_PRELOAD=$PRELOAD $DASH -c 'echo x | readlink /proc/self/fd/0'))"
	[ "$is_linux" = 0 ] || die "plain dash pipe is a Stream? ($is_linux)"
	[ "$is_streams" = 1 ] || die "LD_PRELOAD=$PRELOAD did not give a STREAMS pipe ($is_streams)"
	[ "$is_off" = 0 ] || fail "STREAMS_PIPE=0 did not fall back to a Linux pipe ($is_off)"

	# Three stages, briefly: if a stage hangs (an ioctl such as isatty()'s TCGETS that nobody
	# answers across the pipe), every case below would hang too. Output to a file: $(...) would
	# wait for the hung stages, not only for timeout.
	LD_PRELOAD=$PRELOAD timeout 30 $DASH -c 'seq 1 10 | cat | wc -l' >$W/probe
	[ "$(cat $W/probe)" = 10 ] || die "'seq 1 10 | cat | wc -l' over STREAMS pipes did not finish in 30 s (got '$(cat $W/probe)'): a stage hangs"
fi
seq 1 100000 >$W/seq || die "seq"
dd if=/dev/urandom of=$W/rand bs=1024 count=2048 2>/dev/null || die "dd"
echo "pipeline: inputs $(wc -c <$W/seq) and $(wc -c <$W/rand) bytes"

# name|pipeline (reads $W, writes stdout)
cases='text|cat W/seq | gzip -1 | gzip -d | sort -rn | tr 0-9 a-j | uniq
binary|cat W/rand | gzip -1 | cat | gzip -d | dd bs=4096 2>/dev/null | cat
teefan|cat W/rand | tee W/teecopy.KIND | sha256sum | cut -d" " -f1
sigpipe|yes abcdefghijklmnopqrstuvwxyz | head -c 4000000 | wc -c'

echo "$cases" | while IFS='|' read -r name cmd; do
	for kind in $kinds; do
		c=$(echo "$cmd" | sed "s|W/|$W/|g; s|KIND|$kind|g")
		t0=$(date +%s)
		# (timeout: a hang fails the case instead of the whole guest run)
		if [ $kind = streams ]; then
			LD_PRELOAD=$PRELOAD timeout $LIMIT $DASH -c "$c" >$W/$name.$kind
		else
			timeout $LIMIT $DASH -c "$c" >$W/$name.$kind
		fi
		rc=$?
		echo "pipeline: $name [$kind]: rc=$rc, $(wc -c <$W/$name.$kind) bytes out, $(($(date +%s) - t0)) s"
		[ $rc = 0 ] || {
			echo "FAILED $name $kind rc=$rc" >>$W/failures
			reap
		}
	done
	[ $MODE = full ] || continue
	if cmp $W/$name.linux $W/$name.streams; then
		echo "ok pipeline $name: STREAMS output identical to Linux ($(sha256sum <$W/$name.streams | cut -c1-16))"
	else
		echo "FAILED $name: outputs differ" >>$W/failures
	fi
done
[ -e $W/failures ] && {
	cat $W/failures
	fail "see above"
}

# The outputs are right, not only equal.
k=${kinds##* }
cmp $W/rand $W/binary.$k || fail "binary pipeline changed the data"
cmp $W/rand $W/teecopy.$k || fail "tee copy through STREAMS pipes differs"
[ "$(sha256sum <$W/rand | cut -d' ' -f1)" = "$(cat $W/teefan.$k)" ] || fail "tee fan checksum"
[ "$(cat $W/sigpipe.$k)" = 4000000 ] || fail "head -c 4000000 counted $(cat $W/sigpipe.$k)"
[ "$(head -n 1 $W/text.$k)" = baaaaa ] || fail "text pipeline first line '$(head -n 1 $W/text.$k)'"
[ "$(wc -l <$W/text.$k)" = 100000 ] || fail "text pipeline lines"

rm -rf $W
if [ $MODE = full ]; then
	# Every STREAMS pipe end is closed again: the module is left loaded for /init, whose
	# unload step checks that it unloads.
	[ $failed = 0 ] && echo "pipeline: all pipelines identical over Linux and STREAMS pipes"
else
	[ $failed = 0 ] && echo "pipeline: Linux pipelines right (MODE=linux-only)"
fi
exit $failed
