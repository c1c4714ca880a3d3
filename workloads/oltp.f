# fsbench personality "oltp" (written for fsbench).
# A database in the style of Oracle's I/O model. Processes, each a real process:
#   shadow  x nshadows  : random reads of iosize from the data files, then CPU work
#                         (hog), then tell the log writer and the db writers
#   dbwr    x ndbwriters: after enough shadow posts, a batch of asynchronous random
#                         writes to the data files, then wait for them
#   lgwr    x 1         : after enough shadow posts, one synchronous log write
# Posts block when a writer is behind by more than its high-water mark.
# Shootout variables: nshadows 200, ndbwriters 10, usermode 20000, filesize 5g (the whole
# database: ndatafiles files of filesize/ndatafiles), memperthread 1m, workingset 0,
# iosize 2k or 8k, cached 0/1 with directio 1/0.
# Variants: large_db_oltp_{2k,8k}_{cached,uncached}.

set $dir=.
set $ndatafiles=10
set $filesize=5g
set $logfilesize=64m
set $nshadows=200
set $ndbwriters=10
set $usermode=20000
set $memperthread=1m
set $workingset=0
set $iosize=2k
set $cached=0
set $directio=0
set $logiosize=256k
set $writebatch=10
set $maxbacklog=1000

define fileset name=datafiles,path=$dir,totalsize=$filesize,entries=$ndatafiles,dirwidth=1024,prealloc=100,reuse,paralloc,cached=$cached
define file name=logfile,path=$dir,size=$logfilesize,prealloc,reuse

define process name=lgwr,instances=1
{
  thread name=lgwrthread,memsize=$memperthread
  {
    flowop semblock name=lgwait,value=$nshadows,highwater=$maxbacklog
    flowop write name=lgwrite,filename=logfile,iosize=$logiosize,dsync
  }
}

define process name=dbwr,instances=$ndbwriters
{
  thread name=dbwrthread,memsize=$memperthread
  {
    flowop semblock name=dbwait,value=$writebatch,highwater=$maxbacklog
    flowop aiowrite name=dbaiowrite,filesetname=datafiles,iosize=$iosize,workingset=$workingset,random,iters=$writebatch,directio=$directio,dsync
    flowop aiowait name=dbaiowait
  }
}

define process name=shadow,instances=$nshadows
{
  thread name=shadowthread,memsize=$memperthread
  {
    flowop read name=shadowread,filesetname=datafiles,iosize=$iosize,workingset=$workingset,random,directio=$directio
    flowop hog name=shadowhog,value=$usermode
    flowop sempost name=postlg,target=lgwait,value=1,blocking
    flowop sempost name=postdbwr,target=dbwait,value=1,blocking
  }
}

echo "oltp: $nshadows shadows, $ndbwriters db writers, $iosize I/O, directio $directio"
run 60
