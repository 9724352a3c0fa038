/**
 * The operator's dashboard page: one self-contained HTML page (no CDN, no external request; its
 * script and style allowed by hash), live from the dashboard's server-sent events. It shows, per
 * gate: slots held against the limit, the line, admitted and busy per second, the ETA, store
 * latency, breakers, the instances, the last 15 minutes as charts, the look back (the last hour,
 * day or 30 days from the per-minute history, fetched from `history`), and the live controls.
 */
import { inlineHashes, pageCsp, REDUCED_MOTION } from './csp.js'
import { CONTROL_MODES } from '../core/control.js'

export const DASHBOARD_STYLE =
  'body{margin:0;font:14px/1.4 system-ui,sans-serif;background:#f4f5f7;color:#1d2330}header{padding:.8em 1.2em;' +
  'background:#1d2330;color:#fff;display:flex;gap:1em;align-items:baseline}header small{opacity:.7}' +
  'section{background:#fff;margin:1em;padding:1em;border-radius:8px;box-shadow:0 1px 3px #0002}' +
  'h2{margin:0 0 .6em;font-size:1.2em}.tiles{display:grid;grid-template-columns:repeat(auto-fill,minmax(9em,1fr));gap:.6em}' +
  '.tile{background:#f4f5f7;border-radius:6px;padding:.5em .7em}.tile b{display:block;font-size:1.6em}' +
  '.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(22em,1fr));gap:.8em;margin-top:.8em}' +
  'figure{margin:0}figcaption{font-size:.85em;color:#556}svg{width:100%;height:90px;background:#fafbfc;border-radius:4px}' +
  'table{border-collapse:collapse;width:100%;margin-top:.8em;font-size:.9em}td,th{text-align:left;padding:.2em .5em;border-bottom:1px solid #e3e5e8}' +
  'form{display:flex;flex-wrap:wrap;gap:.5em;align-items:end;margin-top:.8em}label{display:flex;flex-direction:column;font-size:.8em}' +
  'input,select,button{font:inherit;padding:.25em .4em}.err{color:#b00020}.open{color:#b00020;font-weight:bold}' +
  '.back{margin-top:1em;border-top:1px solid #e3e5e8}h3{font-size:1em;margin:.8em 0 .4em}.back [role=group]{display:flex;gap:.4em}' +
  `.back button[aria-pressed=true]{background:#1d2330;color:#fff}${REDUCED_MOTION}`

/**
 * The page's script: reads `#d`'s data attributes, opens `events` (server-sent events) under the
 * page's own path, renders every gate on each message (a control form is kept while its control's
 * version is unchanged, so what the operator types survives the updates), and posts it to `control`.
 */
export const DASHBOARD_SCRIPT = `(function(){
var root=document.getElementById('d'),base=location.pathname.replace(/\\/?$/,'/'),hist={},gates={};
function el(t,a,c){var e=document.createElement(t);for(var k in a)e.setAttribute(k,a[k]);if(c!=null)e.textContent=c;return e}
function fmt(v,u){return v==null?'-':(Math.round(v*10)/10)+(u||'')}
function chart(fig,series,title,span){var w=600,h=90,pts=series[0].data.length,max=1;
series.forEach(function(s){s.data.forEach(function(v){if(v!=null&&v>max)max=v})});
var svg=document.createElementNS('http://www.w3.org/2000/svg','svg');svg.setAttribute('viewBox','0 0 '+w+' '+h);svg.setAttribute('preserveAspectRatio','none');
series.forEach(function(s){var d='';s.data.forEach(function(v,i){if(v==null)return;var x=pts<2?0:i*w/(pts-1),y=h-2-(v/max)*(h-6);d+=(d?' L':'M')+x.toFixed(1)+' '+y.toFixed(1)});
var p=document.createElementNS('http://www.w3.org/2000/svg','path');p.setAttribute('d',d);p.setAttribute('fill','none');p.setAttribute('stroke',s.color);p.setAttribute('stroke-width','2');p.setAttribute('vector-effect','non-scaling-stroke');svg.appendChild(p)});
fig.textContent='';fig.appendChild(svg);fig.appendChild(el('figcaption',{},title+' (max '+fmt(max)+', '+(span||'last 15 min')+')'))}
var backs={},SPANS={hour:'last hour',day:'last day','30d':'last 30 days'};
function back(name){var b=backs[name];if(b)return b;b=backs[name]=el('div',{'class':'back','data-back':name});b.appendChild(el('h3',{},'Look back'));
var bar=el('div',{role:'group','aria-label':'look back over'});Object.keys(SPANS).forEach(function(r){var x=el('button',{type:'button','data-range':r,'aria-pressed':'false'},SPANS[r]);x.addEventListener('click',function(){load(name,r)});bar.appendChild(x)});
b.appendChild(bar);b.appendChild(el('p',{'data-k':'back-totals'},'loading...'));b.appendChild(el('div',{'class':'charts'}));load(name,'hour');return b}
function load(name,range){var b=backs[name],say=function(t){b.querySelector('[data-k="back-totals"]').textContent=t};
fetch(base+'history?name='+encodeURIComponent(name)+'&range='+range,{credentials:'same-origin'}).then(function(r){return r.json()}).then(function(j){
b.setAttribute('data-range',range);b.querySelectorAll('button').forEach(function(x){x.setAttribute('aria-pressed',String(x.dataset.range===range))});if(j.error)return say(j.error);
var p=j.points,t=j.totals,per=j.step===1?'a minute':'an hour',c=b.querySelector('.charts');function col(k){return p.map(function(x){return x[k]})}
say(SPANS[range]+': admitted '+t.admitted+', turned away '+t.turnedAway+', gave up '+t.abandoned+', most in line '+fmt(t.inLineMax)+', wait p50 / p90 '+fmt(t.waitP50,' s')+' / '+fmt(t.waitP90,' s'));c.textContent='';
[[[{data:col('inLine'),color:'#7c3aed'}],'in line at the minute end'],[[{data:col('admitted'),color:'#16a34a'},{data:col('turnedAway'),color:'#dc2626'}],'admitted (green) and turned away (red) '+per],
[[{data:col('waitP50'),color:'#2563eb'},{data:col('waitP90'),color:'#ea580c'}],'wait in line p50 (blue) and p90 (orange), s']].forEach(function(x){var f=el('figure',{'data-back-chart':x[1]});c.appendChild(f);chart(f,x[0],x[1],SPANS[range])})}).catch(function(){say('history unavailable')})}
function tile(box,label,value,id){var t=el('div',{'class':'tile'});t.appendChild(el('b',{'data-k':id},value));t.appendChild(document.createTextNode(label));box.appendChild(t)}
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
function render(views){views.forEach(function(v){var sec=gates[v.name];if(!sec){sec=gates[v.name]=el('section',{'data-gate':v.name});root.appendChild(sec)}
var keep=sec.querySelector('form'),s=v.sample||{},c=v.control;sec.textContent='';
sec.appendChild(el('h2',{},v.name+(c.version?' - control v'+c.version+' by '+(c.updatedBy||'?'):'')));var box=el('div',{'class':'tiles'});sec.appendChild(box);
tile(box,'held of '+fmt(s.limit),fmt(s.held),'held');tile(box,'waiting in line',fmt(s.waiting),'waiting');tile(box,'admitted / s',fmt(s.admittedPerSecond),'admitted');
tile(box,'busy / s',fmt(s.busyPerSecond),'busy');tile(box,'ETA for a newcomer',fmt(s.eta,' s'),'eta');tile(box,'store p50 / p99',fmt(s.storeP50,' ms')+' / '+fmt(s.storeP99,' ms'),'latency');
tile(box,'breakers open',fmt(s.breakersOpen),'breakers');tile(box,'instances',fmt(s.instances),'instances');tile(box,'mode',c.mode+(c.admissionRate?' - '+c.admissionRate+'/min':''),'mode');
if(v.error)sec.appendChild(el('p',{'class':'err'},'store: '+v.error));var h=hist[v.name]||[],charts=el('div',{'class':'charts'});sec.appendChild(charts);
function col(k){return h.map(function(x){return x[k]})}[[[{data:col('held'),color:'#2563eb'},{data:col('limit'),color:'#9ca3af'}],'slots held (blue) and limit (grey)'],
[[{data:col('waiting'),color:'#7c3aed'}],'waiting in line'],[[{data:col('admittedPerSecond'),color:'#16a34a'},{data:col('busyPerSecond'),color:'#dc2626'}],'admitted (green) and busy (red) per second'],
[[{data:col('eta'),color:'#ea580c'}],'ETA (s)'],[[{data:col('storeP99'),color:'#0891b2'}],'store latency p99 (ms)']].forEach(function(x){var f=el('figure',{});charts.appendChild(f);chart(f,x[0],x[1])});
var t=el('table',{}),hr=el('tr',{});['instance','mode','limit','admitted','busy','over share','challenged / failed','queued','passes','store errors','p99 ms','breaker'].forEach(function(x){hr.appendChild(el('th',{},x))});t.appendChild(hr);
v.instances.forEach(function(i){var r=el('tr',{});[i.id,i.mode,i.limit,i.counters.admitted,i.counters.busy,fmt(i.counters.clientShare),fmt(i.counters.challenged)+' / '+fmt(i.counters.challengeFailed),i.counters.queued,i.counters.pass,i.counters.storeErrors,fmt(i.storeLatencyMs.p99),i.breaker].forEach(function(x,k){r.appendChild(el('td',k===11&&x==='open'?{'class':'open'}:{},x))});t.appendChild(r)});sec.appendChild(t);
if(root.dataset.history==='1')sec.appendChild(back(v.name));
if(keep&&keep.dataset.v===String(c.version))sec.appendChild(keep);else controls(sec,v)})}
var es=new EventSource(base+'events');es.addEventListener('init',function(e){var j=JSON.parse(e.data);hist=j.history;render(j.views)});
es.addEventListener('sample',function(e){var j=JSON.parse(e.data);j.views.forEach(function(v){if(v.sample){var h=hist[v.name]=hist[v.name]||[];if(!h.length||h[h.length-1].t!==v.sample.t)h.push(v.sample);if(h.length>900)h.shift()}});render(j.views);
document.getElementById('u').textContent='updated '+new Date().toLocaleTimeString()});es.onerror=function(){document.getElementById('u').textContent='reconnecting...'}})()`

export const dashboardHashes = inlineHashes(DASHBOARD_SCRIPT, DASHBOARD_STYLE)

/** The policy sent with the page: its script and style, and requests to its own origin. */
export const DASHBOARD_CSP = pageCsp(dashboardHashes, "connect-src 'self'; ").replace("form-action 'none'", "form-action 'self'")

/** The page (about 10 KB): everything else comes from the events. */
export function renderDashboardPage(options: { names: readonly string[]; controls: boolean; history?: boolean }): string {
  return (
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">' +
    '<meta name="robots" content="noindex"><title>airlock-shield: dashboard</title>' +
    `<style>${DASHBOARD_STYLE}</style></head><body><header><b>airlock-shield</b><span>${options.names.length} gate(s)</span>` +
    `<small id="u">connecting...</small></header><main id="d" data-controls="${options.controls ? 1 : 0}" data-history="${options.history === false ? 0 : 1}"></main>` +
    `<script>${DASHBOARD_SCRIPT}</script></body></html>`
  )
}
