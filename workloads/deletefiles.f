# fsbench personality "deletefiles" (written for fsbench).
# Preallocates a tree of files, then threads delete them until none is left.
# Shootout parameters: nfiles 100000, meandirwidth 20, filesize 16k, nthreads 16.

set $dir=.
set $nfiles=100000
set $meandirwidth=20
set $filesize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)
set $nthreads=16

set mode quit alldone

define fileset name=deleteset,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$meandirwidth,prealloc=100,paralloc

define process name=deleter,instances=1
{
  thread name=deleterthread,memsize=64k,instances=$nthreads
  {
    flowop deletefile name=deletefile,filesetname=deleteset
  }
}

echo "deletefiles: $nfiles files, mean width $meandirwidth, $nthreads threads"
run 60
