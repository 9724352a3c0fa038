/**
 * The dashboard page's script (ES5, inline, allowed by its hash: src/pages/dashboard.ts). It reads
 * `#d`'s data attributes, opens `events` (server-sent events) under the page's own path, renders
 * every gate on each message (a control form is kept while its control's version is unchanged, so
 * what the operator types survives the updates), and posts it to `control`. Charts have a time
 * axis (HTML labels placed through the CSSOM, which the page's CSP allows: no style attribute);
 * tiles go quiet (a dash) once no new sample came for three intervals (at least 3 s); the look back
 * is fetched again every 10 s (30 days: every minute), its last point the minute in progress.
 */
import { CONTROL_MODES } from '../core/control.js'

/** The script's text, as the page inlines it and its CSP hashes it. */
export const DASHBOARD_SCRIPT = `(function(){
var root=document.getElementById('d'),base=location.pathname.replace(/\\/?$/,'/'),hist={},gates={},views=[],fresh={},seen={},quiet={},down=false;
var SVG='http://www.w3.org/2000/svg',MIN=60000,STALE=Math.max(3000,3*(+root.dataset.interval||1000)),DASH='\\u2014';
function el(t,a,c){var e=document.createElement(t);for(var k in a)if(a[k]!=null)e.setAttribute(k,a[k]);if(c!=null)e.textContent=c;return e}
function fmt(v,u){return v==null?'-':(Math.round(v*10)/10)+(u||'')}
function clock(t,full){var d=new Date(t);return full?d.toLocaleString():d.toLocaleTimeString()}
function chart(fig,series,times,axis,title,note){var w=600,h=90,max=1,from=axis.to-axis.span,x=function(t){return (t-from)/axis.span*w};
series.forEach(function(s){s.data.forEach(function(v){if(v!=null&&v>max)max=v})});
var svg=document.createElementNS(SVG,'svg');svg.setAttribute('viewBox','0 0 '+w+' '+h);svg.setAttribute('preserveAspectRatio','none');svg.setAttribute('aria-hidden','true');
var ax=el('div',{'class':'axis'});for(var k=axis.span/axis.every;k>=0;k--){var t=axis.to-k*axis.every,px=x(t),g=document.createElementNS(SVG,'line');
[['x1',px],['x2',px],['y1',0],['y2',h],['stroke','#d5d8de'],['vector-effect','non-scaling-stroke']].forEach(function(a){g.setAttribute(a[0],a[1])});svg.appendChild(g);
var tick=el('time',{datetime:new Date(t).toISOString(),title:clock(t,true)},k?'\\u2212'+k*axis.every/axis.unit+' '+axis.name:'now');tick.style.left=(px/w*100)+'%';ax.appendChild(tick)}
series.forEach(function(s){var d='';s.data.forEach(function(v,i){if(v==null||times[i]<from)return;var y=h-2-(v/max)*(h-6);d+=(d?' L':'M')+x(times[i]).toFixed(1)+' '+y.toFixed(1)});
var p=document.createElementNS(SVG,'path');p.setAttribute('d',d);p.setAttribute('fill','none');p.setAttribute('stroke',s.color);p.setAttribute('stroke-width','2');p.setAttribute('vector-effect','non-scaling-stroke');svg.appendChild(p)});
fig.textContent='';fig.appendChild(svg);fig.appendChild(ax);fig.appendChild(el('figcaption',{},title+' (max '+fmt(max)+', '+note+')'))}
var backs={},SPANS={hour:'last hour',day:'last day','30d':'last 30 days'};
var AXES={hour:{span:60*MIN,every:15*MIN,unit:MIN,name:'min'},day:{span:1440*MIN,every:360*MIN,unit:60*MIN,name:'h'},'30d':{span:43200*MIN,every:14400*MIN,unit:1440*MIN,name:'d'}};
function back(name){var b=backs[name];if(b)return b;b=backs[name]=el('div',{'class':'back','data-back':name});b.appendChild(el('h3',{},'Look back'));
var bar=el('div',{role:'group','aria-label':'look back over'});Object.keys(SPANS).forEach(function(r){var x=el('button',{type:'button','data-range':r,'aria-pressed':'false'},SPANS[r]);x.addEventListener('click',function(){load(name,r)});bar.appendChild(x)});
b.appendChild(bar);b.appendChild(el('p',{'data-k':'back-totals'},'loading...'));b.appendChild(el('div',{'class':'charts'}));load(name,'hour');b.ticks=0;setInterval(function(){if(b.want!=='30d'||++b.ticks%6===0)load(name,b.want)},10000);return b}
function load(name,range){var b=backs[name],say=function(t){b.querySelector('[data-k="back-totals"]').textContent=t};b.want=range;
fetch(base+'history?name='+encodeURIComponent(name)+'&range='+range,{credentials:'same-origin'}).then(function(r){return r.json()}).then(function(j){if(b.want!==range)return;
b.setAttribute('data-range',range);b.querySelectorAll('button').forEach(function(x){x.setAttribute('aria-pressed',String(x.dataset.range===range))});if(j.error)return say(j.error);
var p=j.points,t=j.totals,per=j.step===1?'a minute':'an hour',open=j.open!=null,c=b.querySelector('.charts'),times=p.map(function(x){return x.t}),axis=AXES[range];function col(k){return p.map(function(x){return x[k]})}
axis.to=p.length?p[p.length-1].t:Date.now();
say(SPANS[range]+': admitted '+t.admitted+', turned away '+t.turnedAway+', gave up '+t.abandoned+', most in line '+fmt(t.inLineMax)+', wait p50 / p90 '+fmt(t.waitP50,' s')+' / '+fmt(t.waitP90,' s')+(open?' (the minute in progress included)':''));c.textContent='';
[[[{data:col('inLine'),color:'#7c3aed'}],'in line at the minute end'],[[{data:col('admitted'),color:'#16a34a'},{data:col('turnedAway'),color:'#dc2626'}],'admitted (green) and turned away (red) '+per],
[[{data:col('waitP50'),color:'#2563eb'},{data:col('waitP90'),color:'#ea580c'}],'wait in line p50 (blue) and p90 (orange), s']].forEach(function(x){var f=el('figure',{'data-back-chart':x[1],'data-open':open?'1':null});c.appendChild(f);
chart(f,x[0],times,axis,x[1],SPANS[range]+(open?'; the last point is the '+(j.step===1?'minute':'hour')+' in progress':''))})}).catch(function(){say('history unavailable')})}
function stale(name){return !(Date.now()-(fresh[name]||0)<=STALE)}
function tile(box,label,value,id,hint,q){var t=el('div',{'class':'tile'+(q?' quiet':''),title:q?(hint?hint+'; ':'')+'no new figures since '+(fresh[q]?clock(fresh[q]):'the page opened'):hint});
t.appendChild(el('b',{'data-k':id},q?DASH:value));t.appendChild(document.createTextNode(label));box.appendChild(t)}
function post(name,patch,msg){fetch(base+'control',{method:'POST',credentials:'same-origin',headers:{'content-type':'application/json','x-airlock-dashboard':'1'},body:JSON.stringify({name:name,patch:patch})})
.then(function(r){return r.json().then(function(j){msg.textContent=r.ok?'applied (version '+j.version+')':(j.error||'failed')})}).catch(function(){msg.textContent='failed'})}
function controls(sec,v){if(root.dataset.controls!=='1')return;var c=v.control,f=el('form',{'data-v':c.version});
f.appendChild(lab('limit',inp('limit',c.limit==null?'':c.limit,'number')));var m=el('select',{name:'mode'});${JSON.stringify(CONTROL_MODES).replace(/"/g, "'")}.forEach(function(x){var o=el('option',{value:x},x);if(x===c.mode)o.selected=true;m.appendChild(o)});f.appendChild(lab('mode',m));
f.appendChild(lab('admissions / min',inp('rate',c.admissionRate==null?'':c.admissionRate,'number')));f.appendChild(lab('opens at (UTC)',inp('opensAt',c.opensAt?c.opensAt.slice(0,16):'','datetime-local')));
var b=el('button',{type:'submit'},'Apply');f.appendChild(b);var msg=el('span',{'data-k':'msg'});f.appendChild(msg);
f.addEventListener('submit',function(e){e.preventDefault();var g=function(n){return f.elements[n].value},p={};
p.limit=g('limit')===''?null:+g('limit');p.mode=g('mode');p.admissionRate=g('rate')===''?null:+g('rate');p.opensAt=g('opensAt')===''?null:g('opensAt')+':00Z';
if((p.mode==='closed'||p.mode==='passthrough')&&p.mode!==c.mode&&!confirm((p.mode==='closed'?'Close the site to new visitors':'Switch the gate off (passthrough)')+' on every instance of '+v.name+'?'))return;post(v.name,p,msg)});sec.appendChild(f)}
function lab(t,i){var l=el('label',{},t);l.appendChild(i);return l}function inp(n,v,t){return el('input',{name:n,value:v,type:t,min:t==='number'?'1':null})}
var QUEUED='every answer that told a visitor to wait, polls included (the 202 answers): a count of answers, not of people; the people in the line now are in the waiting in line tile';
var COLS=[['instance'],['mode'],['limit'],['admitted'],['busy'],['over share'],['challenged / failed'],['queued answers (202)',QUEUED],['passes'],['store errors'],['p99 ms'],['breaker']];
function render(list){views=list;list.forEach(function(v){var sec=gates[v.name];if(!sec){sec=gates[v.name]=el('section',{'data-gate':v.name});root.appendChild(sec)}
var keep=sec.querySelector('form'),s=v.sample||{},c=v.control,q=stale(v.name)?v.name:null;quiet[v.name]=!!q;sec.textContent='';
sec.appendChild(el('h2',{},v.name+(c.version?' - control v'+c.version+' by '+(c.updatedBy||'?'):'')));var box=el('div',{'class':'tiles'});sec.appendChild(box);
tile(box,'held of '+fmt(s.limit),fmt(s.held),'held','slots held in the store by every instance, of the limit in force',q);tile(box,'waiting in line',fmt(s.waiting),'waiting','people in the line now, over every instance',q);
tile(box,'admitted / s',fmt(s.admittedPerSecond),'admitted','admissions a second over the last sample, every instance',q);tile(box,'busy / s',fmt(s.busyPerSecond),'busy','busy answers a second over the last sample, every instance',q);
tile(box,'ETA for a newcomer',fmt(s.eta,' s'),'eta',null,q);tile(box,'store p50 / p99',fmt(s.storeP50,' ms')+' / '+fmt(s.storeP99,' ms'),'latency',null,q);
tile(box,'breakers open',fmt(s.breakersOpen),'breakers',null,q);tile(box,'instances',fmt(s.instances),'instances',null,q);tile(box,'mode',c.mode+(c.admissionRate?' - '+c.admissionRate+'/min':''),'mode',null,null);
if(v.error)sec.appendChild(el('p',{'class':'err'},'store: '+v.error));var h=hist[v.name]||[],charts=el('div',{'class':'charts'}),times=h.map(function(x){return x.t});sec.appendChild(charts);
var axis={to:h.length?h[h.length-1].t:Date.now(),span:15*MIN,every:5*MIN,unit:MIN,name:'min'};
function col(k){return h.map(function(x){return x[k]})}[[[{data:col('held'),color:'#2563eb'},{data:col('limit'),color:'#9ca3af'}],'slots held (blue) and limit (grey)'],
[[{data:col('waiting'),color:'#7c3aed'}],'waiting in line'],[[{data:col('admittedPerSecond'),color:'#16a34a'},{data:col('busyPerSecond'),color:'#dc2626'}],'admitted (green) and busy (red) per second'],
[[{data:col('eta'),color:'#ea580c'}],'ETA (s)'],[[{data:col('storeP99'),color:'#0891b2'}],'store latency p99 (ms)']].forEach(function(x){var f=el('figure',{});charts.appendChild(f);chart(f,x[0],times,axis,x[1],'last 15 min')});
var t=el('table',{}),hr=el('tr',{});COLS.forEach(function(x){hr.appendChild(el('th',{scope:'col',title:x[1]},x[0]))});t.appendChild(hr);
v.instances.forEach(function(i){var r=el('tr',{});[i.id,i.mode,i.limit,i.counters.admitted,i.counters.busy,fmt(i.counters.clientShare),fmt(i.counters.challenged)+' / '+fmt(i.counters.challengeFailed),i.counters.queued,i.counters.pass,i.counters.storeErrors,fmt(i.storeLatencyMs.p99),i.breaker].forEach(function(x,k){r.appendChild(el('td',k===11&&x==='open'?{'class':'open'}:{},x))});t.appendChild(r)});sec.appendChild(t);
sec.appendChild(el('p',{'class':'legend'},'queued answers (202): every answer that told a visitor to wait, polls included (answers, not people); waiting in line: the people in the line now.'));
if(root.dataset.history==='1')sec.appendChild(back(v.name));
if(keep&&keep.dataset.v===String(c.version))sec.appendChild(keep);else controls(sec,v)});status()}
function took(list){list.forEach(function(v){if(v.sample&&!v.error&&v.sample.t!==seen[v.name]){seen[v.name]=v.sample.t;fresh[v.name]=Date.now()}})}
function status(){var names=Object.keys(gates),t=0,u=document.getElementById('u');names.forEach(function(n){t=Math.max(t,fresh[n]||0)});if(!names.length){if(down)u.textContent='reconnecting...';return}
u.textContent=(down?'reconnecting... ':'')+(names.every(stale)?'no update since '+(t?clock(t):'the page opened'):'updated '+clock(t))}
var es=new EventSource(base+'events');es.addEventListener('init',function(e){var j=JSON.parse(e.data);down=false;hist=j.history;took(j.views);render(j.views)});
es.addEventListener('sample',function(e){var j=JSON.parse(e.data);down=false;j.views.forEach(function(v){if(v.sample){var h=hist[v.name]=hist[v.name]||[];if(!h.length||h[h.length-1].t!==v.sample.t)h.push(v.sample);if(h.length>900)h.shift()}});took(j.views);render(j.views)});
es.onerror=function(){down=true;status()};
setInterval(function(){if(views.some(function(v){return quiet[v.name]!==stale(v.name)}))render(views);else status()},1000)})()`
