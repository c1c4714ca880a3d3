# fsbench personality "filemicro_create" (written for fsbench).
# Creates one file and allocates it by writing count pieces of iosize (with O_DSYNC-style
# writes when sync=1), then closes it; the run ends when every thread has done so.
# Variants: createandalloc (iosize 1m, count 64), createallocsync (iosize 1m, count 1k, sync 1).

set $dir=.
set $nthreads=1
set $iosize=1m
set $count=64
set $sync=0

set mode quit alldone

define fileset name=createallocset,path=$dir,entries=$nthreads,size=0,prealloc=0

define process name=allocator,instances=1
{
  thread name=allocthread,memsize=1m,instances=$nthreads
  {
    flowop createfile name=createfile,filesetname=createallocset,fd=1
    flowop write name=allocwrite,fd=1,iosize=$iosize,iters=$count,dsync=$sync
    flowop closefile name=closefile,fd=1
    flowop finishoncount name=finish,value=1,target=closefile
  }
}

echo "filemicro_create: $count writes of $iosize, sync $sync"
run 60
