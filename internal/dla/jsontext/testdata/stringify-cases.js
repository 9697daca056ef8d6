// Writes stringify-node.json: random JSON texts (escapes, lone surrogates,
// repeated and array-index keys, numbers of every shape) with what Node.js
// prints for JSON.stringify(JSON.parse(text)). Run: node stringify-cases.js stringify-node.json
function rnd(n){return Math.floor(Math.random()*n)}
function num(){
  const forms=[()=>String(rnd(1e6)),()=>(Math.random()*10**rnd(40)).toString(),()=>rnd(10)+'.'+rnd(1000)+'e'+(rnd(2)?'-':'+')+rnd(330),
   ()=>'-'+rnd(100)+'.'+'0'.repeat(rnd(5)),()=>String(rnd(10))+'0'.repeat(rnd(30)),()=>'0.'+'0'.repeat(rnd(10))+rnd(1e6),()=>rnd(9)+'E'+rnd(25)];
  let s=forms[rnd(forms.length)]();
  if(!/^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(s)) s='1';
  return s;
}
function str(){
  const parts=['a','é','\\u00e9','\\ud83d\\ude00','\\ud800','\\udc00','\\u2028','\\n','\\"','\\\\','\\/','<&>','\\u0001','\x7f','中','\\uFFFF'];
  let s='"'; for(let i=rnd(6);i>0;i--) s+=parts[rnd(parts.length)]; return s+'"';
}
function val(d){
  const k=rnd(d>3?3:6);
  if(k==0) return num(); if(k==1) return str(); if(k==2) return ['true','false','null'][rnd(3)];
  if(k==3){let a=[];for(let i=rnd(4);i>0;i--)a.push(val(d+1));return '['+a.join(' , ')+']'}
  let m=[];const keys=['"a"','"b"','"0"','"10"','"2"','"01"','"-1"','"4294967295"','"4294967294"','"\\u0061"','"é"'];
  for(let i=rnd(6);i>0;i--) m.push(keys[rnd(keys.length)]+':'+val(d+1));
  return '{'+m.join(',')+'}';
}
const out=[];
for(let i=0;i<800;i++){const t=val(0); out.push({in:t,want:JSON.stringify(JSON.parse(t))});}
require('fs').writeFileSync(process.argv[2], JSON.stringify({node: process.version, cases: out}));
