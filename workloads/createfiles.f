# fsbench personality "createfiles" (written for fsbench).
# Creates a directory tree of files: each thread takes a file that does not exist yet,
# creates it, writes its whole size and closes it. The run ends when every file exists
# (mode quit alldone) or when the time is up.
# Shootout parameters: nfiles 100000, dirwidth 20, filesize 16k (gamma 1.5), nthreads 16.
# Scale with -D, e.g. -D nfiles=10000 -D nthreads=4.

set $dir=.
set $nfiles=100000
set $meandirwidth=20
set $filesize=cvar(type=cvar-gamma,parameters=mean:16384;gamma:1.5)
set $nthreads=16
set $iosize=1m

set mode quit alldone

define fileset name=createset,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$meandirwidth,prealloc=0

define process name=creator,instances=1
{
  thread name=creatorthread,memsize=1m,instances=$nthreads
  {
    flowop createfile name=createfile,filesetname=createset,fd=1
    flowop writewholefile name=writefile,fd=1,iosize=$iosize
    flowop closefile name=closefile,fd=1
  }
}

echo "createfiles: $nfiles files, mean width $meandirwidth, $nthreads threads"
run 60
