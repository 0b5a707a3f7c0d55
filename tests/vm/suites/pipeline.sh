#!/bin/sh
# Shell pipelines over Linux pipes and over STREAMS pipes (LD_PRELOAD=libstreams_pipe.so),
# compared byte for byte. busybox is static and cannot be interposed, so the pipelines are run
# by dash (dynamically linked; the initramfs carries it and its libraries) whose pipe() calls
# the interposer turns into STREAMS pipes; the stages are busybox applets that only read and
# write the descriptors they inherit. Fails (never skips) when the STREAMS pipe device or the
# interposition is missing: a run where the preload silently fell back to Linux pipes would
# compare Linux with Linux.
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

die() {
	echo "pipeline: FAIL: $*"
	modprobe -r streams 2>/dev/null
	exit 1
}

[ -x $DASH ] || die "$DASH missing from the initramfs"
[ -e $PRELOAD ] || die "$PRELOAD missing from the initramfs"
$DASH -c 'exit 0' || die "dash does not run (shared libraries missing?)"
modprobe streams || die "modprobe streams"
[ -e $DEV ] || die "$DEV absent: no STREAMS pipe driver"

# Which kind of pipe does a dash pipeline get? /proc/self/fd/0 of the last stage says
# pipe:[ino] for a Linux pipe, the device path for a STREAMS pipe.
kind_linux=$($DASH -c 'echo x | readlink /proc/self/fd/0')
kind_streams=$(LD_PRELOAD=$PRELOAD $DASH -c 'echo x | readlink /proc/self/fd/0')
kind_off=$(STREAMS_PIPE=0 LD_PRELOAD=$PRELOAD $DASH -c 'echo x | readlink /proc/self/fd/0')
echo "pipeline: plain dash pipe: $kind_linux; preloaded: $kind_streams; STREAMS_PIPE=0: $kind_off"
case "$kind_linux" in pipe:*) ;; *) die "plain dash pipe is not a Linux pipe: '$kind_linux'" ;; esac
case "$kind_streams" in
*streams*) ;;
*) die "LD_PRELOAD=$PRELOAD did not give a STREAMS pipe: '$kind_streams'" ;;
esac
case "$kind_off" in pipe:*) ;; *) fail "STREAMS_PIPE=0 did not fall back to a Linux pipe: '$kind_off'" ;; esac

mkdir -p $W || die "mkdir $W"
seq 1 100000 >$W/seq || die "seq"
dd if=/dev/urandom of=$W/rand bs=1024 count=2048 2>/dev/null || die "dd"
echo "pipeline: inputs $(wc -c <$W/seq) and $(wc -c <$W/rand) bytes"

# name|pipeline (reads $W, writes stdout)
cases='text|cat W/seq | gzip -1 | gzip -d | sort -rn | tr 0-9 a-j | uniq
binary|cat W/rand | gzip -1 | cat | gzip -d | dd bs=4096 2>/dev/null | cat
teefan|cat W/rand | tee W/teecopy.KIND | sha256sum | cut -d" " -f1
sigpipe|yes abcdefghijklmnopqrstuvwxyz | head -c 4000000 | wc -c'

echo "$cases" | while IFS='|' read -r name cmd; do
	for kind in linux streams; do
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
		[ $rc = 0 ] || echo "FAILED $name $kind rc=$rc" >>$W/failures
	done
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
cmp $W/rand $W/binary.streams || fail "binary pipeline changed the data"
cmp $W/rand $W/teecopy.streams || fail "tee copy through STREAMS pipes differs"
[ "$(sha256sum <$W/rand | cut -d' ' -f1)" = "$(cat $W/teefan.streams)" ] || fail "tee fan checksum"
[ "$(cat $W/sigpipe.streams)" = 4000000 ] || fail "head -c 4000000 counted $(cat $W/sigpipe.streams)"
[ "$(head -n 1 $W/text.streams)" = baaaaa ] || fail "text pipeline first line '$(head -n 1 $W/text.streams)'"
[ "$(wc -l <$W/text.streams)" = 100000 ] || fail "text pipeline lines"

rm -rf $W
modprobe -r streams || fail "modprobe -r streams (pipe ends left open?)"
if [ $failed = 0 ]; then
	echo "pipeline: all pipelines identical over Linux and STREAMS pipes"
fi
exit $failed
