# fsbench personality "filemicro_rwrite" (written for fsbench).
# Random writes of iosize into one large preallocated file, from nthreads threads, each
# write synchronous (O_DSYNC semantics) when sync=1.
# Variants: randwrite2ksync (iosize 2k, sync 1, cached 1),
#           randwrite2ksync4thread (iosize 2k, sync 1, nthreads 4).

set $dir=.
set $filesize=5g
set $nthreads=1
set $iosize=2k
set $sync=1
set $cached=1
set $workingset=0

define file name=rwritefile,path=$dir,size=$filesize,prealloc,reuse,cached=$cached

define process name=rwriter,instances=1
{
  thread name=rwritethread,memsize=1m,instances=$nthreads
  {
    flowop write name=randwrite,filename=rwritefile,iosize=$iosize,random,workingset=$workingset,dsync=$sync
  }
}

echo "filemicro_rwrite: $iosize random writes to $filesize, $nthreads threads, sync $sync"
run 60
