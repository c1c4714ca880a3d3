# fsbench personality "filemicro_seqread" (written for fsbench).
# Sequential reads of iosize through one large preallocated file (wrapping at the end).
# Variants: seqread32k (cached 0), seqread32kcached (cached 1); iosize 32k, filesize 5g.

set $dir=.
set $filesize=5g
set $nthreads=1
set $iosize=32k
set $cached=0

define file name=seqreadfile,path=$dir,size=$filesize,prealloc,reuse,cached=$cached

define process name=seqreader,instances=1
{
  thread name=seqreadthread,memsize=1m,instances=$nthreads
  {
    flowop read name=seqread,filename=seqreadfile,iosize=$iosize
  }
}

echo "filemicro_seqread: $iosize sequential reads through $filesize, cached $cached"
run 60
