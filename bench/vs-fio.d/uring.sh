# io_uring cases for bench/vs-fio.sh (issue 3): sourced by it, appends to CASE_TABLE.
# fio gets its fastest io_uring settings too: registered buffers and files, no random map.
# bench/vs-fio-uring.sh runs the same cases with alternating order and whole-process CPU.
URING_FIO="--ioengine=io_uring --fixedbufs=1 --registerfiles=1 --norandommap --randrepeat=0"
for qd in 1 8 32; do
  CASE_TABLE+=("uring_direct_rr_qd$qd|--rw randread --bs 4k --size 1g --cache direct --engine uring --qd $qd --time ${SECS}s|--rw=randread --bs=4k --size=1g --direct=1 --iodepth=$qd $URING_FIO --runtime=${SECS} --time_based|0")
done
CASE_TABLE+=("uring_hot_rr_qd32|--rw randread --bs 4k --size 1g --no-invalidate --engine uring --qd 32 --time ${SECS}s|--rw=randread --bs=4k --size=1g --invalidate=0 --iodepth=32 $URING_FIO --runtime=${SECS} --time_based|1")
CASE_TABLE+=("uring_seq_1m_qd8|--rw read --bs 1m --size 1g --cache direct --engine uring --qd 8 --time ${SECS}s|--rw=read --bs=1m --size=1g --direct=1 --iodepth=8 $URING_FIO --runtime=${SECS} --time_based|0")
