# fsbench personality "filemicro_createrand" (written for fsbench).
# Creates files one after another and grows each with appends of random size (1 byte to
# iosize), appends times per file; ends when every file of the set exists.
# Variant: createallocappend (nthreads 1).

set $dir=.
set $nthreads=1
set $nfiles=1000
set $iosize=1m
set $appends=8

set mode quit alldone

define fileset name=appendset,path=$dir,entries=$nfiles,size=0,dirwidth=100,prealloc=0

define process name=appender,instances=1
{
  thread name=appendthread,memsize=1m,instances=$nthreads
  {
    flowop createfile name=createfile,filesetname=appendset,fd=1
    flowop appendfilerand name=appendrand,fd=1,iosize=$iosize,iters=$appends
    flowop closefile name=closefile,fd=1
  }
}

echo "filemicro_createrand: $nfiles files, $appends random appends up to $iosize each"
run 60
