# fsbench personality "filemicro_seqwriterand" (written for fsbench).
# Sequential appends of random size (1 byte to iosize) to a new file, count of them.
# Variant: seqwriterand8k (iosize 8k, count 128k).

set $dir=.
set $nthreads=1
set $iosize=8k
set $count=128k
set $sync=0

set mode quit alldone

define file name=seqwriterandfile,path=$dir,size=0

define process name=seqwriter,instances=1
{
  thread name=seqwriterandthread,memsize=1m,instances=$nthreads
  {
    flowop appendfilerand name=seqwriterand,filename=seqwriterandfile,iosize=$iosize,dsync=$sync
    flowop finishoncount name=finish,value=$count,target=seqwriterand
  }
}

echo "filemicro_seqwriterand: $count appends up to $iosize, sync $sync"
run 60
