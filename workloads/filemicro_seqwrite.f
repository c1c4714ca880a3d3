# fsbench personality "filemicro_seqwrite" (written for fsbench).
# Sequential writes of iosize to a new file, count of them, synchronous when sync=1.
# Variants: seqwrite32k (sync 0), seqwrite32kdsync (sync 1); iosize 32k, count 32k.

set $dir=.
set $nthreads=1
set $iosize=32k
set $count=32k
set $sync=0

set mode quit alldone

define file name=seqwritefile,path=$dir,size=0

define process name=seqwriter,instances=1
{
  thread name=seqwritethread,memsize=1m,instances=$nthreads
  {
    flowop write name=seqwrite,filename=seqwritefile,iosize=$iosize,dsync=$sync
    flowop finishoncount name=finish,value=$count,target=seqwrite
  }
}

echo "filemicro_seqwrite: $count writes of $iosize, sync $sync"
run 60
