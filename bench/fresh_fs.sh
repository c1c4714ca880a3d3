# A file system made anew before every run (sourced by vs-filebench.sh and vs-build.sh).
# A workload that creates and deletes thousands of files runs on the state the previous run,
# of either side, left; a file system made anew per run gives every run the same start.
#
#   FRESH_FS=ext4|xfs (empty: nothing is made), FS_IMAGE_DIR (default /dev/shm) holds the
#   loop device's image, FS_SIZE (default 4G) is its size.
#   fresh_fs_check DIR   refuse (one line, exit 2) an unknown FRESH_FS or a DIR that is not an
#                        empty directory or is already a mount point; create the image
#   fresh_fs             make the file system anew and mount it on DIR (nothing without FRESH_FS)
#   fresh_fs_end         unmount, detach and remove the image (for the caller's EXIT trap)
FRESH_FS="${FRESH_FS:-}"
FRESH_FS_DIR=""
FRESH_FS_IMAGE=""
FRESH_FS_LOOP=""

fresh_fs_check() { # DIR
  case "$FRESH_FS" in
    "") return 0 ;;
    ext4 | xfs) ;;
    *) echo "FRESH_FS=$FRESH_FS: accepted are ext4 and xfs" >&2; exit 2 ;;
  esac
  [ -d "$1" ] && [ -z "$(ls -A "$1")" ] \
    || { echo "FRESH_FS: $1 must be an empty directory (a file system is mounted on it)" >&2; exit 2; }
  ! mountpoint -q "$1" || { echo "FRESH_FS: $1 is already a mount point" >&2; exit 2; }
  FRESH_FS_DIR="$1"
  FRESH_FS_IMAGE="$(mktemp "${FS_IMAGE_DIR:-/dev/shm}/fsbench-fresh-fs.XXXXXX")"
}

fresh_fs() {
  [ -n "$FRESH_FS" ] || return 0
  if mountpoint -q "$FRESH_FS_DIR"; then umount "$FRESH_FS_DIR"; fi
  [ -z "$FRESH_FS_LOOP" ] || losetup -d "$FRESH_FS_LOOP"
  truncate -s 0 "$FRESH_FS_IMAGE" && truncate -s "${FS_SIZE:-4G}" "$FRESH_FS_IMAGE"
  FRESH_FS_LOOP="$(losetup --find --show "$FRESH_FS_IMAGE")"
  if [ "$FRESH_FS" = ext4 ]; then mkfs.ext4 -q -F "$FRESH_FS_LOOP"; else mkfs.xfs -q -f "$FRESH_FS_LOOP"; fi
  mount "$FRESH_FS_LOOP" "$FRESH_FS_DIR"
}

fresh_fs_end() {
  [ -n "$FRESH_FS_DIR" ] || return 0
  if mountpoint -q "$FRESH_FS_DIR"; then umount "$FRESH_FS_DIR"; fi
  [ -z "$FRESH_FS_LOOP" ] || losetup -d "$FRESH_FS_LOOP" 2>/dev/null || true
  rm -f "$FRESH_FS_IMAGE"
}
