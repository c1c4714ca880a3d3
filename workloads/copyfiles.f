# fsbench personality "copyfiles" (written for fsbench).
# Two trees of the same shape: the source is preallocated, the destination empty. Each
# thread opens a source file, reads it whole, creates a destination file and writes the
# same number of bytes into it. Ends when the destination tree is full.
# Shootout parameters: nfiles 100000, dirwidth 20, filesize 16k, nthreads 16.

set $dir=.
set $nfiles=100000
set $dirwidth=20
set $filesize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)
set $nthreads=16
set $iosize=1m

set mode quit alldone

define fileset name=copysrc,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$dirwidth,prealloc=100,paralloc
define fileset name=copydst,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$dirwidth,prealloc=0

define process name=copier,instances=1
{
  thread name=copierthread,memsize=1m,instances=$nthreads
  {
    flowop openfile name=opensrc,filesetname=copysrc,fd=1
    flowop readwholefile name=readsrc,fd=1,iosize=$iosize
    flowop createfile name=createdst,filesetname=copydst,fd=2
    flowop writewholefile name=writedst,fd=2,srcfd=1,iosize=$iosize
    flowop closefile name=closesrc,fd=1
    flowop closefile name=closedst,fd=2
  }
}

echo "copyfiles: $nfiles files, width $dirwidth, $nthreads threads"
run 60
