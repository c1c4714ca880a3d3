# fsbench personality "fileserver" (written for fsbench).
# A file-server mix in the spirit of SPECsfs over a directory tree: create and write a
# file, append to one, read one whole, delete one, stat one. 80% of the files exist at start.
# Shootout parameters: nfiles 100000, meandirwidth 20, filesize 2k, nthreads 100,
# meaniosize (append size) 16k.

set $dir=.
set $nfiles=100000
set $meandirwidth=20
set $filesize=cvar(type=cvar-gamma,parameters=mean:2048;gamma:1.5)
set $nthreads=100
set $iosize=1m
set $meanappendsize=16k

define fileset name=fileserverset,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$meandirwidth,prealloc=80,paralloc

define process name=fileserver,instances=1
{
  thread name=fileserverthread,memsize=1m,instances=$nthreads
  {
    flowop createfile name=createfile,filesetname=fileserverset,fd=1
    flowop writewholefile name=writewholefile,fd=1,iosize=$iosize
    flowop closefile name=closecreated,fd=1
    flowop openfile name=openappend,filesetname=fileserverset,fd=1
    flowop appendfilerand name=appendrand,fd=1,iosize=$meanappendsize
    flowop closefile name=closeappended,fd=1
    flowop openfile name=openread,filesetname=fileserverset,fd=1
    flowop readwholefile name=readwholefile,fd=1,iosize=$iosize
    flowop closefile name=closeread,fd=1
    flowop deletefile name=deletefile,filesetname=fileserverset
    flowop statfile name=statfile,filesetname=fileserverset
  }
}

echo "fileserver: $nfiles files, width $meandirwidth, $nthreads threads, appends up to $meanappendsize"
run 60
