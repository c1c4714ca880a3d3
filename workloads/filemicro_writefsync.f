# fsbench personality "filemicro_writefsync" (written for fsbench).
# Creates a file and grows it with writes of iosize, calling fsync after every fsyncevery
# writes (a composite flowop), until filesize bytes are written.
# Variant: createallocfsync (nthreads 1).

set $dir=.
set $nthreads=1
set $iosize=8k
set $fsyncevery=32
set $filesize=64m

set mode quit alldone

define fileset name=fsyncset,path=$dir,entries=$nthreads,size=0,prealloc=0

define flowop name=writethensync
{
  flowop write name=fsyncwrite,fd=1,iosize=$iosize,iters=$fsyncevery
  flowop fsync name=fsyncfile,fd=1
  flowop finishonbytes name=finish,value=$filesize,target=fsyncwrite
}

define process name=fsyncer,instances=1
{
  thread name=fsyncthread,memsize=1m,instances=$nthreads
  {
    flowop createfile name=createfile,filesetname=fsyncset,fd=1
    flowop writethensync name=writesync,iters=1000000000
  }
}

echo "filemicro_writefsync: $iosize writes, fsync every $fsyncevery, up to $filesize"
run 60
