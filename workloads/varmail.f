# fsbench personality "varmail" (written for fsbench).
# A /var/mail server in the manner of Postmark, multi-threaded, all files in one
# directory: delete a message; deliver one (create, append, fsync); read one and mark it
# (read whole, append, fsync); read another.
# Shootout parameters: nfiles 100000, meandirwidth 1000000, filesize 1k, nthreads 16,
# meaniosize 16k.

set $dir=.
set $nfiles=100000
set $meandirwidth=1000000
set $filesize=cvar(type=cvar-gamma,parameters=mean:1024;gamma:1.5)
set $nthreads=16
set $iosize=1m
set $meanappendsize=16k

define fileset name=mailset,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$meandirwidth,prealloc=80,paralloc

define process name=mailserver,instances=1
{
  thread name=mailthread,memsize=1m,instances=$nthreads
  {
    flowop deletefile name=deletemsg,filesetname=mailset
    flowop createfile name=createmsg,filesetname=mailset,fd=1
    flowop appendfilerand name=delivermsg,fd=1,iosize=$meanappendsize
    flowop fsync name=fsyncdelivered,fd=1
    flowop closefile name=closedelivered,fd=1
    flowop openfile name=openmark,filesetname=mailset,fd=1
    flowop readwholefile name=readmark,fd=1,iosize=$iosize
    flowop appendfilerand name=markmsg,fd=1,iosize=$meanappendsize
    flowop fsync name=fsyncmarked,fd=1
    flowop closefile name=closemarked,fd=1
    flowop openfile name=openread,filesetname=mailset,fd=1
    flowop readwholefile name=readmsg,fd=1,iosize=$iosize
    flowop closefile name=closeread,fd=1
  }
}

echo "varmail: $nfiles messages, $nthreads threads"
run 60
