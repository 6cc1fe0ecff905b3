// The HTML picture of a plan (see PlanHtml.h). The C++ side writes the static parts of the page
// (title, summary line, legend with bytes per kind, line key) and the plan as columnar JSON in a
// <script type="application/json"> element; the inline script below draws it on a canvas.
//
// The script, in order: installs window.onerror (a separate <script> element, so that even a
// syntax error in the main script is reported through data-error), parses the data, groups the
// buffers by colour, builds the hover index, draws once synchronously (so that data-ready is set
// before the load event, when `chromium --dump-dom` takes its snapshot) and then redraws on
// zoom, pan and resize through requestAnimationFrame.
//
// Hover index: the step range is cut into at most 1024 columns (wider when long-lived buffers
// would make the lists too long); each column lists the buffers live in it sorted by offset,
// with a running maximum of their end addresses. A query binary-searches the column for the
// last buffer starting at or below the address and walks back while the running maximum still
// reaches above it, so a mouse move costs O(log n) plus the few candidates, never a scan.
#include "planner/PlanHtml.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <array>

namespace graphc::plan {

namespace {

struct KindStyle {
  const char *name;
  const char *color;
};

// The kinds the compiler assigns, in legend order, with colours from the Tableau 10 palette
// (distinct for colour-blind readers, and none of them the red of the budget line).
constexpr std::array<KindStyle, 7> standardKinds = {{
    {"parameter", "#4e79a7"},
    {"gradient", "#f28e2b"},
    {"optimizer_state", "#b07aa1"},
    {"activation", "#59a14f"},
    {"temporary", "#edc948"},
    {"workspace", "#ff9da7"},
    {"input", "#76b7b2"},
}};
// Kinds outside the standard set (plans read from files), and buffers without a kind.
constexpr std::array<const char *, 4> extraColors = {"#9c755f", "#86bcb6", "#d4a6c8", "#bab0ac"};
constexpr const char *noKindColor = "#a5aebd";

std::string htmlEscape(llvm::StringRef text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

std::string jsonString(llvm::StringRef text) { return "\"" + escapeJsonForScript(text) + "\""; }

// Deduplicating string table for the JSON (op names and locations repeat a lot).
struct StringTable {
  llvm::StringMap<int64_t> index;
  std::vector<std::string> strings;
  int64_t get(llvm::StringRef s) {
    if (s.empty())
      return -1;
    auto [it, inserted] = index.try_emplace(s, int64_t(strings.size()));
    if (inserted)
      strings.push_back(s.str());
    return it->second;
  }
};

template <typename T, typename F>
void writeArray(llvm::raw_ostream &os, llvm::StringRef key, const std::vector<T> &items, F each) {
  os << "\"" << key << "\":[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i)
      os << ',';
    each(items[i]);
  }
  os << "]";
}

// The page's stylesheet and script. Plain string literals: the page fetches nothing.
constexpr const char *pageStyle = R"css(
*{box-sizing:border-box}
html,body{margin:0;padding:0}
body{font:13px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif;
  color:#1f2328;background:#f6f7f9}
header{padding:10px 16px 6px}
h1{font-size:17px;margin:0 0 2px;font-weight:600;overflow-wrap:anywhere}
.summary{color:#444;margin-bottom:6px}
.summary b{color:#1f2328;font-weight:600}
.legend{display:flex;flex-wrap:wrap;gap:4px 16px;align-items:center}
.legend .item{display:inline-flex;align-items:center;gap:5px;white-space:nowrap}
.legend .item.empty{opacity:.45}
.legend .sw{display:inline-block;width:13px;height:13px;border-radius:2px;
  border:1px solid rgba(0,0,0,.35)}
.legend .n{color:#666}
.legend .ln{display:inline-block;width:22px;height:0;border-top:2px solid #111;
  vertical-align:middle}
.legend .ln.lower{border-top:2px dashed #2b5d8a}
.legend .ln.budget{border-top:2px dashed #d62728}
#wrap{position:relative;margin:4px 16px 0;background:#fff;border:1px solid #d0d7de;
  border-radius:4px}
#plot,#overlay{display:block}
#overlay{position:absolute;left:0;top:0;cursor:crosshair}
#overlay.drag{cursor:grabbing}
#tip{position:absolute;display:none;pointer-events:none;background:rgba(255,255,255,.97);
  border:1px solid #8c959f;border-radius:4px;padding:6px 8px;box-shadow:0 2px 8px rgba(0,0,0,.18);
  max-width:460px;font-size:12px;z-index:2}
#tip .name{font-weight:600;margin-bottom:3px;overflow-wrap:anywhere;
  font-family:ui-monospace,"DejaVu Sans Mono",monospace}
#tip table{border-collapse:collapse}
#tip td{padding:0 6px 0 0;vertical-align:top}
#tip td:first-child{color:#666;white-space:nowrap}
#tip .sw{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:4px;
  border:1px solid rgba(0,0,0,.35)}
footer{display:flex;justify-content:space-between;gap:16px;padding:4px 16px 8px;color:#555;
  font-size:12px}
#readout{font-family:ui-monospace,"DejaVu Sans Mono",monospace}
)css";

// Installed first and on its own, so that errors anywhere in the main script (syntax errors
// included) reach data-error.
constexpr const char *errorScript = R"js(
window.onerror=function(msg,src,line,col,err){
  var b=document.body;if(b)b.setAttribute('data-error',String(msg)+' at '+line+':'+col);
};
window.addEventListener('unhandledrejection',function(e){
  document.body.setAttribute('data-error','unhandled rejection: '+String(e.reason));
});
)js";

constexpr const char *mainScript = R"js(
(function(){
'use strict';
var D=JSON.parse(document.getElementById('plan-data').textContent);
document.title=D.title;
var N=D.name.length, OFF=D.offset, SIZE=D.size, FIRST=D.first, LAST=D.last, KIND=D.kind;
var S=D.str, dpr=window.devicePixelRatio||1;

// ---- formatting ----
var UNITS=['B','KiB','MiB','GiB','TiB','PiB','EiB'];
function human(b){
  if(b<1024)return b+' B';
  var v=b/1024,u=1;while(v>=1024&&u<UNITS.length-1){v/=1024;u++;}
  return v.toFixed(2)+' '+UNITS[u];
}
function group3(n){return String(n).replace(/\B(?=(\d{3})+(?!\d))/g,',');}
function str(i){return i>=0?S[i]:'';}

// ---- colours: four shades per kind, so that neighbours of one kind stay distinguishable ----
function shade(hex,f){
  var n=parseInt(hex.slice(1),16),c=[(n>>16)&255,(n>>8)&255,n&255];
  for(var k=0;k<3;k++)c[k]=Math.round(f>=0?c[k]+(255-c[k])*f:c[k]*(1+f));
  return c;
}
var SHADES=[0,0.16,-0.12,0.30], NS=SHADES.length, NK=D.kinds.length;
var fills=[],inks=[];
for(var k=0;k<NK;k++)for(var s=0;s<NS;s++){
  var c=shade(D.colors[k],SHADES[s]);
  fills.push('rgb('+c[0]+','+c[1]+','+c[2]+')');
  // names drawn inside rectangles: white on dark fills, near-black on light ones
  inks.push(0.299*c[0]+0.587*c[1]+0.114*c[2]<140?'#fff':'#1f2328');
}
// Buffers grouped by fill, so that one pass sets each fillStyle once.
var groupStart=new Int32Array(NK*NS+1), order=new Int32Array(N);
(function(){
  var cnt=new Int32Array(NK*NS);
  for(var i=0;i<N;i++)cnt[KIND[i]*NS+i%NS]++;
  for(var g=0;g<NK*NS;g++)groupStart[g+1]=groupStart[g]+cnt[g];
  var pos=groupStart.slice(0,NK*NS);
  for(var i=0;i<N;i++)order[pos[KIND[i]*NS+i%NS]++]=i;
})();

// ---- extents ----
var S0=Infinity,S1=-Infinity,TOP=0;
for(var i=0;i<N;i++){
  if(FIRST[i]<S0)S0=FIRST[i];
  if(LAST[i]+1>S1)S1=LAST[i]+1;
  if(OFF[i]+SIZE[i]>TOP)TOP=OFF[i]+SIZE[i];
}
var stepOp=new Map(), stepLoc=new Map();
for(var j=0;j<D.steps.index.length;j++){
  var si=D.steps.index[j];
  stepOp.set(si,D.steps.op[j]);stepLoc.set(si,D.steps.loc[j]);
  if(si<S0)S0=si;
  if(si+1>S1)S1=si+1;
}
if(!(S0<S1)){S0=0;S1=1;}
TOP=Math.max(TOP,D.arena,D.lower,D.budget===null?0:D.budget,1);

// ---- hover index: step columns, each sorted by offset with a running max of the end ----
var colW=1,NC=0,colStart,colList,colEnd;
(function(){
  var span=S1-S0,byOff=new Int32Array(N);
  for(var i=0;i<N;i++)byOff[i]=i;
  byOff.sort(function(a,b){return OFF[a]-OFF[b]||a-b;});
  colW=Math.max(1,Math.ceil(span/1024));
  var total;
  for(;;){
    NC=Math.ceil(span/colW);total=0;
    for(var i=0;i<N;i++)total+=Math.floor((LAST[i]-S0)/colW)-Math.floor((FIRST[i]-S0)/colW)+1;
    if(total<=4e6||NC<=1)break;
    colW*=2;
  }
  var cnt=new Int32Array(NC+1);
  for(var i=0;i<N;i++){
    var a=Math.floor((FIRST[i]-S0)/colW),b=Math.floor((LAST[i]-S0)/colW);
    for(var c=a;c<=b;c++)cnt[c+1]++;
  }
  colStart=new Int32Array(NC+1);
  for(var c=0;c<NC;c++)colStart[c+1]=colStart[c]+cnt[c+1];
  colList=new Int32Array(total);colEnd=new Float64Array(total);
  var pos=colStart.slice(0,NC);
  for(var r=0;r<N;r++){
    var i=byOff[r],a=Math.floor((FIRST[i]-S0)/colW),b=Math.floor((LAST[i]-S0)/colW);
    for(var c=a;c<=b;c++)colList[pos[c]++]=i;
  }
  for(var c=0;c<NC;c++){
    var m=-1;
    for(var j=colStart[c];j<colStart[c+1];j++){
      var e=OFF[colList[j]]+SIZE[colList[j]];if(e>m)m=e;colEnd[j]=m;
    }
  }
})();
function hitAt(step,addr){
  if(step<S0||step>=S1||addr<0)return -1;
  var c=Math.floor((step-S0)/colW),lo=colStart[c],hi=colStart[c+1];
  // last j in [lo,hi) with OFF<=addr
  while(lo<hi){var mid=(lo+hi)>>1;if(OFF[colList[mid]]<=addr)lo=mid+1;else hi=mid;}
  for(var j=lo-1;j>=colStart[c]&&colEnd[j]>addr;j--){
    var i=colList[j];
    if(FIRST[i]<=step&&step<=LAST[i]&&addr<OFF[i]+SIZE[i])return i;
  }
  return -1;
}

// ---- layout and view ----
var wrap=document.getElementById('wrap'),plot=document.getElementById('plot'),
    over=document.getElementById('overlay'),tip=document.getElementById('tip'),
    readout=document.getElementById('readout');
var ctx=plot.getContext('2d'),octx=over.getContext('2d');
var W=0,H=0,M={l:86,r:18,t:14,b:44};
var home={x0:S0,x1:S1,y0:0,y1:TOP*1.04}, view={x0:home.x0,x1:home.x1,y0:home.y0,y1:home.y1};
function pw(){return W-M.l-M.r;} function ph(){return H-M.t-M.b;}
function sx(){return pw()/(view.x1-view.x0);} function sy(){return ph()/(view.y1-view.y0);}
function X(step){return M.l+(step-view.x0)*sx();}
function Y(addr){return M.t+ph()-(addr-view.y0)*sy();}
function resize(){
  W=Math.max(480,wrap.clientWidth-2);
  var top=wrap.getBoundingClientRect().top+window.scrollY;
  H=Math.max(360,Math.floor(window.innerHeight-top-34));
  [plot,over].forEach(function(c){
    c.width=Math.round(W*dpr);c.height=Math.round(H*dpr);
    c.style.width=W+'px';c.style.height=H+'px';
  });
}

// ---- ticks ----
function niceStep(range,target){
  var raw=range/Math.max(1,target),p=Math.pow(10,Math.floor(Math.log10(raw))),f=raw/p;
  return (f<=1?1:f<=2?2:f<=5?5:10)*p;
}
function stepTicks(){
  var st=Math.max(1,niceStep(view.x1-view.x0,pw()/80)),out=[];
  for(var t=Math.ceil(view.x0/st)*st;t<=view.x1;t+=st)out.push(t);
  return out;
}
function byteTicks(){
  var u=1,ui=0;
  while(ui<UNITS.length-1&&view.y1>=u*1024){u*=1024;ui++;}
  var st=niceStep((view.y1-view.y0)/u,ph()/48);
  if(ui===0)st=Math.max(1,st);
  var dec=Math.max(0,-Math.floor(Math.log10(st)+1e-9)),out=[];
  for(var t=Math.ceil(view.y0/u/st)*st;t*u<=view.y1;t+=st){
    var v=Number(t.toFixed(dec));
    out.push({v:v*u,label:(v===0?'0':v.toFixed(dec)+' '+UNITS[ui])});
  }
  return out;
}

// ---- drawing ----
var LINES=[];
if(D.budget!==null)LINES.push({v:D.budget,label:'budget',color:'#d62728',dash:[7,4],w:2});
LINES.push({v:D.lower,label:'lower bound',color:'#2b5d8a',dash:[4,3],w:1.5});
LINES.push({v:D.arena,label:'arena top',color:'#111',dash:[],w:1.5});
var FONT='12px system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif';
var NAMEFONT='11px system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Arial,sans-serif';
function draw(){
  ctx.setTransform(dpr,0,0,dpr,0,0);
  ctx.clearRect(0,0,W,H);
  ctx.fillStyle='#fff';ctx.fillRect(0,0,W,H);
  var L=M.l,R=W-M.r,T=M.t,B=H-M.b,kx=sx(),ky=sy();
  ctx.font=FONT;
  // grid
  var yt=byteTicks(),xt=stepTicks();
  ctx.strokeStyle='#eef0f3';ctx.lineWidth=1;ctx.beginPath();
  yt.forEach(function(t){var y=Math.round(Y(t.v))+0.5;ctx.moveTo(L,y);ctx.lineTo(R,y);});
  xt.forEach(function(t){var x=Math.round(X(t))+0.5;ctx.moveTo(x,T);ctx.lineTo(x,B);});
  ctx.stroke();
  // buffers: one pass, grouped by fill; outlines of rectangles large enough to show them
  ctx.save();ctx.beginPath();ctx.rect(L,T,R-L,B-T);ctx.clip();
  var outline=new Path2D(),nOut=0,drawn=0;
  for(var g=0;g<NK*NS;g++){
    if(groupStart[g]===groupStart[g+1])continue;
    ctx.fillStyle=fills[g];
    for(var r=groupStart[g];r<groupStart[g+1];r++){
      var i=order[r];
      var x0=L+(FIRST[i]-view.x0)*kx,x1=L+(LAST[i]+1-view.x0)*kx;
      if(x1<L||x0>R)continue;
      var y1=B-(OFF[i]-view.y0)*ky,y0=B-(OFF[i]+SIZE[i]-view.y0)*ky;
      if(y1<T||y0>B)continue;
      x0=Math.max(x0,L-2);x1=Math.min(x1,R+2);y0=Math.max(y0,T-2);y1=Math.min(y1,B+2);
      var ax=Math.round(x0),bx=Math.round(x1),ay=Math.round(y0),by=Math.round(y1);
      if(bx<=ax)bx=ax+1;
      if(by<=ay)by=ay+1;
      ctx.fillRect(ax,ay,bx-ax,by-ay);drawn++;
      if(bx-ax>=5&&by-ay>=4){outline.rect(ax+0.5,ay+0.5,bx-ax-1,by-ay-1);nOut++;}
    }
  }
  if(nOut){ctx.strokeStyle='rgba(0,0,0,0.38)';ctx.lineWidth=1;ctx.stroke(outline);}
  // names inside rectangles tall and wide enough for them (at most 600 per draw)
  ctx.font=NAMEFONT;ctx.textAlign='left';ctx.textBaseline='middle';
  var nNames=0;
  for(var g=0;g<NK*NS&&nNames<600;g++){
    ctx.fillStyle=inks[g];
    for(var r=groupStart[g];r<groupStart[g+1]&&nNames<600;r++){
      var i=order[r],nm=D.name[i];
      if(!nm)continue;
      var x0=Math.max(L,L+(FIRST[i]-view.x0)*kx),x1=Math.min(R,L+(LAST[i]+1-view.x0)*kx);
      var y0=Math.max(T,B-(OFF[i]+SIZE[i]-view.y0)*ky),y1=Math.min(B,B-(OFF[i]-view.y0)*ky);
      if(y1-y0<14||x1-x0<36)continue;
      var room=x1-x0-8,w=ctx.measureText(nm).width;
      if(w>room){
        var keep=Math.floor(nm.length*room/w)-1;
        if(keep<3)continue;
        nm=nm.slice(0,keep)+'\u2026';
      }
      ctx.fillText(nm,x0+4,(y0+y1)/2);nNames++;
    }
  }
  ctx.font=FONT;
  // budget, lower bound and arena top
  LINES.forEach(function(l){
    var y=Math.round(Y(l.v))+0.5;l.y=y;
    ctx.strokeStyle=l.color;ctx.lineWidth=l.w;ctx.setLineDash(l.dash);
    ctx.beginPath();ctx.moveTo(L,y);ctx.lineTo(R,y);ctx.stroke();
  });
  ctx.setLineDash([]);
  ctx.restore();
  // line labels, right-aligned above their lines, pushed apart when the lines are close
  var labels=LINES.filter(function(l){return l.y>=T-1&&l.y<=B+1;}).map(function(l){
    return {l:l,y:l.y-4,text:l.label+' '+human(l.v)};
  }).sort(function(a,b){return a.y-b.y;});
  for(var k=labels.length-2;k>=0;k--)if(labels[k+1].y-labels[k].y<15)labels[k].y=labels[k+1].y-15;
  for(var k=0;k<labels.length;k++){
    var minY=k===0?T+12:labels[k-1].y+15;
    if(labels[k].y<minY)labels[k].y=minY;
  }
  ctx.textAlign='right';ctx.textBaseline='alphabetic';
  labels.forEach(function(o){
    var w=ctx.measureText(o.text).width;
    ctx.fillStyle='rgba(255,255,255,0.85)';ctx.fillRect(R-w-8,o.y-11,w+6,15);
    ctx.fillStyle=o.l.color;ctx.fillText(o.text,R-5,o.y);
  });
  // axes
  ctx.strokeStyle='#57606a';ctx.lineWidth=1;ctx.beginPath();
  ctx.moveTo(L-0.5,T);ctx.lineTo(L-0.5,B+0.5);ctx.lineTo(R,B+0.5);ctx.stroke();
  ctx.fillStyle='#333';ctx.textAlign='right';ctx.textBaseline='middle';
  ctx.beginPath();
  yt.forEach(function(t){
    var y=Math.round(Y(t.v))+0.5;ctx.moveTo(L-5,y);ctx.lineTo(L,y);ctx.fillText(t.label,L-8,y);
  });
  ctx.textAlign='center';ctx.textBaseline='top';
  xt.forEach(function(t){
    var x=Math.round(X(t))+0.5;ctx.moveTo(x,B);ctx.lineTo(x,B+5);ctx.fillText(String(t),x,B+8);
  });
  ctx.stroke();
  ctx.fillStyle='#555';ctx.textBaseline='alphabetic';
  ctx.fillText('step',(L+R)/2,H-6);
  ctx.save();ctx.translate(14,(T+B)/2);ctx.rotate(-Math.PI/2);
  ctx.fillText('address (offset in arena)',0,0);ctx.restore();
  drawOverlay();
  return drawn;
}

// ---- hover ----
var hover=-1,mouse=null,drag=null;
function drawOverlay(){
  octx.setTransform(dpr,0,0,dpr,0,0);
  octx.clearRect(0,0,W,H);
  if(hover<0)return;
  var i=hover,L=M.l,R=W-M.r,T=M.t,B=H-M.b;
  var x0=Math.max(L,X(FIRST[i])),x1=Math.min(R,X(LAST[i]+1));
  var y0=Math.max(T,Y(OFF[i]+SIZE[i])),y1=Math.min(B,Y(OFF[i]));
  if(x1<x0||y1<y0)return;
  octx.fillStyle='rgba(255,255,255,0.25)';octx.fillRect(x0,y0,Math.max(1,x1-x0),Math.max(1,y1-y0));
  octx.strokeStyle='#000';octx.lineWidth=2;
  octx.strokeRect(Math.round(x0)-1,Math.round(y0)-1,Math.round(x1-x0)+2,Math.round(y1-y0)+2);
}
function pick(px,py){
  var kx=sx(),ky=sy();
  var tries=[[0,0],[0,-2],[0,2],[-2,0],[2,0],[0,-4],[0,4],[-3,-3],[3,3],[-3,3],[3,-3]];
  for(var t=0;t<tries.length;t++){
    var qx=px+tries[t][0],qy=py+tries[t][1];
    if(qx<M.l||qx>W-M.r||qy<M.t||qy>H-M.b)continue;
    var i=hitAt(Math.floor(view.x0+(qx-M.l)/kx),view.y0+(H-M.b-qy)/ky);
    if(i>=0)return i;
  }
  return -1;
}
function row(tb,k,v,color){
  var tr=document.createElement('tr'),a=document.createElement('td'),b=document.createElement('td');
  a.textContent=k;
  if(color){
    var sw=document.createElement('span');sw.className='sw';sw.style.background=color;
    b.appendChild(sw);
  }
  b.appendChild(document.createTextNode(v));
  tr.appendChild(a);tr.appendChild(b);tb.appendChild(tr);
}
function stepName(s){
  var op=stepOp.has(s)?str(stepOp.get(s)):'',loc=stepLoc.has(s)?str(stepLoc.get(s)):'';
  return 'step '+s+(op?' '+op:'')+(loc?' ('+loc+')':'');
}
var tipFor=-1;
function showTip(i,px,py){
  if(i!==tipFor)fillTip(i);
  tip.style.display='block';
  var tw=tip.offsetWidth,th=tip.offsetHeight,x=px+16,y=py+16;
  if(x+tw>W-4)x=Math.max(4,px-tw-16);
  if(y+th>H-4)y=Math.max(4,py-th-16);
  tip.style.left=x+'px';tip.style.top=y+'px';
}
function fillTip(i){
  tipFor=i;tip.textContent='';
  var nm=document.createElement('div');nm.className='name';
  nm.textContent=D.name[i]!==''?D.name[i]:'(buffer #'+i+')';tip.appendChild(nm);
  var tb=document.createElement('table');
  row(tb,'kind',D.kinds[KIND[i]]||'(no kind)',D.colors[KIND[i]]);
  var op=str(D.op[i]);
  if(op)row(tb,'op',op);
  if(stepOp.has(FIRST[i]))row(tb,'first step',stepName(FIRST[i]));
  var al=SIZE[i]!==D.bytes[i]?' (aligned '+human(SIZE[i])+')':'';
  row(tb,'size',human(D.bytes[i])+al+(D.bytes[i]>=1024?' = '+group3(D.bytes[i])+' B':''));
  var n=LAST[i]-FIRST[i]+1;
  row(tb,'lifetime','steps '+FIRST[i]+(n>1?'..'+LAST[i]:'')+' ('+n+' step'+(n>1?'s':'')+')');
  if(stepOp.has(LAST[i])&&LAST[i]!==FIRST[i])row(tb,'last step',stepName(LAST[i]));
  row(tb,'offset',human(OFF[i])+(OFF[i]>=1024?' = '+group3(OFF[i])+' B':''));
  var end=OFF[i]+SIZE[i];
  row(tb,'end',human(end)+(end>=1024?' = '+group3(end)+' B':''));
  tip.appendChild(tb);
}
function updateHover(){
  if(!mouse||drag){return;}
  var i=pick(mouse.x,mouse.y);
  var inPlot=mouse.x>=M.l&&mouse.x<=W-M.r&&mouse.y>=M.t&&mouse.y<=H-M.b;
  if(inPlot){
    var s=Math.floor(view.x0+(mouse.x-M.l)/sx()),a=view.y0+(H-M.b-mouse.y)/sy();
    readout.textContent=stepName(s)+'   address '+human(Math.max(0,Math.round(a)));
  } else readout.textContent='';
  if(i!==hover){hover=i;drawOverlay();}
  if(i>=0)showTip(i,mouse.x,mouse.y);else tip.style.display='none';
}

// ---- zoom and pan ----
var pending=false;
function schedule(){
  if(pending)return;
  pending=true;
  requestAnimationFrame(function(){pending=false;draw();updateHover();});
}
function clampView(){
  var w=view.x1-view.x0,h=view.y1-view.y0;
  if(w<0.5){var c=(view.x0+view.x1)/2;view.x0=c-0.25;view.x1=c+0.25;}
  if(h<16){var c2=(view.y0+view.y1)/2;view.y0=c2-8;view.y1=c2+8;}
}
over.addEventListener('wheel',function(e){
  e.preventDefault();
  var px=e.offsetX,py=e.offsetY,dy=e.deltaY*(e.deltaMode===1?33:e.deltaMode===2?400:1);
  var f=Math.exp(Math.max(-1,Math.min(1,dy*0.0015)));
  var cx=view.x0+(px-M.l)/sx(),cy=view.y0+(H-M.b-py)/sy();
  if(!e.altKey){view.x0=cx-(cx-view.x0)*f;view.x1=cx+(view.x1-cx)*f;}
  if(!e.shiftKey){view.y0=cy-(cy-view.y0)*f;view.y1=cy+(view.y1-cy)*f;}
  clampView();schedule();
},{passive:false});
over.addEventListener('mousedown',function(e){
  drag={x:e.offsetX,y:e.offsetY,v:{x0:view.x0,x1:view.x1,y0:view.y0,y1:view.y1}};
  over.classList.add('drag');tip.style.display='none';
});
window.addEventListener('mouseup',function(){
  if(drag){drag=null;over.classList.remove('drag');updateHover();}
});
over.addEventListener('mousemove',function(e){
  mouse={x:e.offsetX,y:e.offsetY};
  if(drag){
    var dx=(e.offsetX-drag.x)/sx(),dy=(e.offsetY-drag.y)/sy();
    view.x0=drag.v.x0-dx;view.x1=drag.v.x1-dx;view.y0=drag.v.y0+dy;view.y1=drag.v.y1+dy;
    schedule();return;
  }
  updateHover();
});
over.addEventListener('mouseleave',function(){
  mouse=null;hover=-1;tip.style.display='none';readout.textContent='';drawOverlay();
});
over.addEventListener('dblclick',function(){
  view={x0:home.x0,x1:home.x1,y0:home.y0,y1:home.y1};schedule();
});
window.addEventListener('resize',function(){resize();schedule();});

resize();
var drawn=draw();
document.body.setAttribute('data-buffers',String(N));
document.body.setAttribute('data-drawn',String(drawn));
document.body.setAttribute('data-ready','1');
})();
)js";

} // namespace

std::string escapeJsonForScript(llvm::StringRef text) {
  std::string fixed;
  if (!llvm::json::isUTF8(text)) {
    fixed = llvm::json::fixUTF8(text);
    text = fixed;
  }
  std::string out;
  out.reserve(text.size() + 8);
  static constexpr const char *hex = "0123456789abcdef";
  auto u = [&](unsigned code) {
    out += "\\u";
    for (int shift = 12; shift >= 0; shift -= 4)
      out += hex[(code >> shift) & 0xf];
  };
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '<': case '>': case '&': u(c); break;
    default:
      if (c < 0x20 || c == 0x7f) {
        u(c);
      } else if (c == 0xe2 && text.substr(i, 3) == "\xe2\x80\xa8") {
        u(0x2028); // U+2028 and U+2029 end lines in older JavaScript
        i += 2;
      } else if (c == 0xe2 && text.substr(i, 3) == "\xe2\x80\xa9") {
        u(0x2029);
        i += 2;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out;
}

void writePlanHtml(llvm::raw_ostream &os, const Plan &plan, const std::vector<Step> &steps,
                   std::optional<uint64_t> budget, uint64_t lowerBound, llvm::StringRef title) {
  const uint64_t alignment = plan.alignment == 0 ? 1 : plan.alignment;
  const std::string pageTitle = title.empty() ? std::string("memory plan") : title.str();

  // Kind table: the standard kinds first (always in the legend), then others as they appear.
  std::vector<std::string> kinds;
  std::vector<std::string> colors;
  llvm::StringMap<int64_t> kindIndex;
  for (const KindStyle &k : standardKinds) {
    kindIndex[k.name] = int64_t(kinds.size());
    kinds.push_back(k.name);
    colors.push_back(k.color);
  }
  std::vector<int64_t> bufferKind(plan.buffers.size());
  size_t extra = 0;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    llvm::StringRef kind = plan.buffers[i].kind;
    auto [it, inserted] = kindIndex.try_emplace(kind, int64_t(kinds.size()));
    if (inserted) {
      kinds.push_back(kind.str());
      colors.push_back(kind.empty() ? noKindColor : extraColors[extra++ % extraColors.size()]);
    }
    bufferKind[i] = it->second;
  }
  std::vector<uint64_t> kindBytes(kinds.size(), 0);
  std::vector<size_t> kindCount(kinds.size(), 0);
  int64_t minStep = 0, maxStep = -1;
  uint64_t top = 0;
  for (size_t i = 0; i < plan.buffers.size(); ++i) {
    const Buffer &b = plan.buffers[i];
    kindBytes[bufferKind[i]] += b.bytes;
    kindCount[bufferKind[i]] += 1;
    if (i == 0 || b.first < minStep)
      minStep = b.first;
    if (i == 0 || b.last > maxStep)
      maxStep = b.last;
    if (!b.host)
      top = std::max(top, b.offset + alignTo(b.bytes, alignment));
  }
  size_t numSteps = !steps.empty() ? steps.size()
                    : maxStep >= minStep ? size_t(maxStep - minStep + 1)
                                         : 0;

  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
     << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
     << "<title>" << htmlEscape(pageTitle) << "</title>\n<style>" << pageStyle << "</style>\n"
     << "</head>\n<body>\n<script>" << errorScript << "</script>\n";

  // Header: title, summary line, legend (kinds with their bytes, then the lines).
  os << "<header>\n<h1>" << htmlEscape(pageTitle) << "</h1>\n<div class=\"summary\">";
  os << "arena <b>" << humanBytes(plan.arenaBytes) << "</b> &middot; lower bound <b>"
     << humanBytes(lowerBound) << "</b> &middot; gap <b>";
  if (lowerBound != 0)
    os << llvm::format("%.2f%%", 100.0 * (double(plan.arenaBytes) - double(lowerBound)) /
                                     double(lowerBound));
  else
    os << (plan.arenaBytes == 0 ? "0.00%" : "-");
  os << "</b>";
  if (budget)
    os << " &middot; budget <b>" << humanBytes(*budget) << "</b> ("
       << (plan.arenaBytes <= *budget ? "fits" : "does not fit") << ")";
  os << " &middot; <b>" << plan.buffers.size() << "</b> buffers &middot; <b>" << numSteps
     << "</b> steps &middot; alignment " << alignment;
  if (top > plan.arenaBytes)
    os << " &middot; <b>buffers end at " << humanBytes(top) << ", above the arena</b>";
  if (plan.hostArenaBytes)
    os << " &middot; host arena <b>" << humanBytes(plan.hostArenaBytes)
       << "</b> (offloaded optimizer state, drawn above the arena)";
  os << "</div>\n<div class=\"legend\" id=\"legend\">\n";
  for (size_t k = 0; k < kinds.size(); ++k) {
    os << "<span class=\"item" << (kindCount[k] == 0 ? " empty" : "") << "\" data-kind=\""
       << htmlEscape(kinds[k]) << "\"><span class=\"sw\" style=\"background:" << colors[k]
       << "\"></span>" << htmlEscape(kinds[k].empty() ? std::string("(no kind)") : kinds[k])
       << " <span class=\"n\">" << humanBytes(kindBytes[k]) << " / " << kindCount[k]
       << "</span></span>\n";
  }
  if (budget)
    os << "<span class=\"item key-line budget\"><span class=\"ln budget\"></span>budget "
       << humanBytes(*budget) << "</span>\n";
  os << "<span class=\"item key-line lower\"><span class=\"ln lower\"></span>lower bound "
     << humanBytes(lowerBound) << "</span>\n";
  os << "<span class=\"item key-line arena\"><span class=\"ln\"></span>arena top "
     << humanBytes(plan.arenaBytes) << "</span>\n";
  os << "</div>\n</header>\n";

  os << "<div id=\"wrap\"><canvas id=\"plot\"></canvas><canvas id=\"overlay\"></canvas>"
        "<div id=\"tip\"></div></div>\n"
     << "<footer><span id=\"readout\"></span><span>hover: details &middot; wheel: zoom "
        "(shift: steps only, alt: addresses only) &middot; drag: pan &middot; double-click: "
        "reset</span></footer>\n";

  // The data, columnar. Every string goes through escapeJsonForScript, so no '<' appears
  // inside the element.
  StringTable strings;
  std::vector<int64_t> bufferOp(plan.buffers.size());
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    bufferOp[i] = strings.get(plan.buffers[i].op);
  std::vector<int64_t> stepOps(steps.size()), stepLocs(steps.size());
  for (size_t i = 0; i < steps.size(); ++i) {
    stepOps[i] = strings.get(steps[i].op);
    stepLocs[i] = strings.get(steps[i].loc);
  }
  auto num = [&](auto v) { os << v; };
  auto str = [&](const std::string &s) { os << jsonString(s); };
  os << "<script type=\"application/json\" id=\"plan-data\">{";
  os << "\"title\":" << jsonString(pageTitle) << ",\"arena\":" << plan.arenaBytes
     << ",\"lower\":" << lowerBound << ",\"budget\":";
  if (budget)
    os << *budget;
  else
    os << "null";
  os << ",\"alignment\":" << alignment << ",\n";
  writeArray(os, "kinds", kinds, str);
  os << ",";
  writeArray(os, "colors", colors, str);
  os << ",\n";
  writeArray(os, "str", strings.strings, str);
  os << ",\n\"steps\":{";
  writeArray(os, "index", steps, [&](const Step &s) { os << s.index; });
  os << ",";
  writeArray(os, "op", stepOps, num);
  os << ",";
  writeArray(os, "loc", stepLocs, num);
  os << "},\n";
  writeArray(os, "name", plan.buffers, [&](const Buffer &b) { os << jsonString(b.name); });
  os << ",\n";
  writeArray(os, "kind", bufferKind, num);
  os << ",\n";
  writeArray(os, "op", bufferOp, num);
  os << ",\n";
  writeArray(os, "bytes", plan.buffers, [&](const Buffer &b) { os << b.bytes; });
  os << ",\n";
  writeArray(os, "size", plan.buffers,
             [&](const Buffer &b) { os << alignTo(b.bytes, alignment); });
  os << ",\n";
  writeArray(os, "offset", plan.buffers, [&](const Buffer &b) { os << b.offset; });
  os << ",\n";
  writeArray(os, "first", plan.buffers, [&](const Buffer &b) { os << b.first; });
  os << ",\n";
  writeArray(os, "last", plan.buffers, [&](const Buffer &b) { os << b.last; });
  os << "}</script>\n<script>" << mainScript << "</script>\n</body>\n</html>\n";
}

} // namespace graphc::plan
