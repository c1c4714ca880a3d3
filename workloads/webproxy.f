# fsbench personality "webproxy" (written for fsbench).
# A caching web proxy: evict an object (delete), fetch a new one (create, append, close),
# serve five cached objects (open, read whole, close; a composite flowop run 5 times), and
# append to the proxy log.
# Shootout parameters: nfiles 100000, meandirwidth 1000000, filesize 1k, nthreads 100,
# meaniosize 16k.

set $dir=.
set $nfiles=100000
set $meandirwidth=1000000
set $filesize=cvar(type=cvar-gamma,parameters=mean:1024;gamma:1.5)
set $nthreads=100
set $iosize=1m
set $meanappendsize=16k

define fileset name=proxycache,path=$dir,size=$filesize,entries=$nfiles,dirwidth=$meandirwidth,prealloc=80,paralloc
define file name=proxylog,path=$dir,size=0,prealloc

define flowop name=serveobject
{
  flowop openfile name=openobject,filesetname=proxycache,fd=1
  flowop readwholefile name=readobject,fd=1,iosize=$iosize
  flowop closefile name=closeobject,fd=1
}

define process name=proxy,instances=1
{
  thread name=proxythread,memsize=1m,instances=$nthreads
  {
    flowop deletefile name=evict,filesetname=proxycache
    flowop createfile name=fetch,filesetname=proxycache,fd=1
    flowop appendfilerand name=fetchwrite,fd=1,iosize=$meanappendsize
    flowop closefile name=fetchclose,fd=1
    flowop serveobject name=serve5,iters=5
    flowop appendfilerand name=logappend,filename=proxylog,iosize=$meanappendsize
    flowop opslimit name=limit
  }
}

echo "webproxy: $nfiles objects, $nthreads threads"
run 60
