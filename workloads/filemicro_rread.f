# fsbench personality "filemicro_rread" (written for fsbench).
# Random reads of iosize from one large preallocated file. With cached=0 the file's pages
# are dropped from the page cache after it is written (so reads start from the device).
# Variants: randread2k (iosize 2k, cached 0), randread2kcached (iosize 2k, cached 1).

set $dir=.
set $filesize=5g
set $nthreads=1
set $iosize=2k
set $cached=0
set $directio=0
set $workingset=0

define file name=rreadfile,path=$dir,size=$filesize,prealloc,reuse,cached=$cached

define process name=rreader,instances=1
{
  thread name=rreadthread,memsize=1m,instances=$nthreads
  {
    flowop read name=randread,filename=rreadfile,iosize=$iosize,random,workingset=$workingset,directio=$directio
  }
}

echo "filemicro_rread: $iosize random reads from $filesize, cached $cached"
run 60
