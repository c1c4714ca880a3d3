# fsbench personality "webserver" (written for fsbench).
# A web server: serve ten pages (open, read whole, close; a composite flowop run 10 times),
# then append 16k to the access log.
# Shootout parameters: nfiles 100000, meandirwidth 20, filesize 1k, nthreads 100.

set $dir=.
set $nfiles=100000
set $meandirwidth=20
set $filesize=cvar(type=cvar-gamma,parameters=mean:1024;gamma:1.5)
set $nthreads=100
set $iosize=1m
set $appendsize=16k

define fileset name=webpages,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$meandirwidth,prealloc=100,paralloc,readonly
define file name=weblog,path=$dir,size=0,prealloc

define flowop name=servepage
{
  flowop openfile name=openpage,filesetname=webpages,fd=1
  flowop readwholefile name=readpage,fd=1,iosize=$iosize
  flowop closefile name=closepage,fd=1
}

define process name=webserver,instances=1
{
  thread name=webthread,memsize=1m,instances=$nthreads
  {
    flowop servepage name=serve10,iters=10
    flowop appendfile name=logappend,filename=weblog,iosize=$appendsize
  }
}

echo "webserver: $nfiles pages, $nthreads threads"
run 60
