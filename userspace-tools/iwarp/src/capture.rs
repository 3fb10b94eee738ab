// SPDX-License-Identifier: GPL-2.0

//! Minimal pcap / pcapng reader, link/IP/TCP dissection (Ethernet with
//! VLAN tags, Linux cooked capture v1/v2, raw IP, BSD loopback; IPv4 and
//! IPv6) and per-direction TCP reassembly.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One TCP segment of the capture.
#[derive(Debug, Clone)]
pub struct TcpSeg {
    pub flow: Flow,
    pub seq: u32,
    pub syn: bool,
    pub payload: Vec<u8>,
}

/// One direction of a TCP connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Flow {
    pub src: IpAddr,
    pub sport: u16,
    pub dst: IpAddr,
    pub dport: u16,
}

impl Flow {
    pub fn reversed(&self) -> Flow {
        Flow {
            src: self.dst,
            sport: self.dport,
            dst: self.src,
            dport: self.sport,
        }
    }
}

impl std::fmt::Display for Flow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = |ip: &IpAddr, p: u16| match ip {
            IpAddr::V4(v) => format!("{v}:{p}"),
            IpAddr::V6(v) => format!("[{v}]:{p}"),
        };
        write!(
            f,
            "{} -> {}",
            a(&self.src, self.sport),
            a(&self.dst, self.dport)
        )
    }
}

fn rd16(b: &[u8], o: usize, le: bool) -> Option<u16> {
    let a: [u8; 2] = b.get(o..o + 2)?.try_into().ok()?;
    Some(if le {
        u16::from_le_bytes(a)
    } else {
        u16::from_be_bytes(a)
    })
}

fn rd32(b: &[u8], o: usize, le: bool) -> Option<u32> {
    let a: [u8; 4] = b.get(o..o + 4)?.try_into().ok()?;
    Some(if le {
        u32::from_le_bytes(a)
    } else {
        u32::from_be_bytes(a)
    })
}

/// Reads all TCP segments of a pcap or pcapng file.
pub fn read_capture(b: &[u8]) -> Result<Vec<TcpSeg>, String> {
    let magic = rd32(b, 0, false).ok_or("file too short")?;
    match magic {
        0xa1b2_c3d4 | 0xa1b2_3c4d => read_pcap(b, false),
        0xd4c3_b2a1 | 0x4d3c_b2a1 => read_pcap(b, true),
        0x0a0d_0d0a => read_pcapng(b),
        _ => Err(format!("not a pcap/pcapng file (magic {magic:#010x})")),
    }
}

fn read_pcap(b: &[u8], le: bool) -> Result<Vec<TcpSeg>, String> {
    let linktype = rd32(b, 20, le).ok_or("truncated pcap header")? & 0x0fff_ffff;
    let mut o = 24;
    let mut out = Vec::new();
    while o + 16 <= b.len() {
        let incl = rd32(b, o + 8, le).ok_or("truncated record")? as usize;
        let data = b.get(o + 16..o + 16 + incl).ok_or("truncated packet")?;
        if let Some(s) = dissect(linktype, data) {
            out.push(s);
        }
        o += 16 + incl;
    }
    Ok(out)
}

fn read_pcapng(b: &[u8]) -> Result<Vec<TcpSeg>, String> {
    let mut o = 0;
    let mut le = true;
    let mut ifaces: Vec<u32> = Vec::new();
    let mut out = Vec::new();
    while o + 12 <= b.len() {
        let raw_type = rd32(b, o, false).ok_or("truncated block")?;
        if raw_type == 0x0a0d_0d0a {
            let bom = rd32(b, o + 8, true).ok_or("truncated SHB")?;
            le = bom == 0x1a2b_3c4d;
            ifaces.clear();
        }
        let btype = rd32(b, o, le).ok_or("truncated block")?;
        let blen = rd32(b, o + 4, le).ok_or("truncated block")? as usize;
        if blen < 12 || o + blen > b.len() {
            return Err("bad pcapng block length".into());
        }
        let body = &b[o + 8..o + blen - 4];
        match btype {
            1 => ifaces.push(u32::from(rd16(body, 0, le).unwrap_or(1))),
            6 => {
                let ifc = rd32(body, 0, le).unwrap_or(0) as usize;
                let caplen = rd32(body, 12, le).unwrap_or(0) as usize;
                if let (Some(&lt), Some(data)) = (ifaces.get(ifc), body.get(20..20 + caplen)) {
                    if let Some(s) = dissect(lt, data) {
                        out.push(s);
                    }
                }
            }
            3 => {
                let lt = ifaces.first().copied().unwrap_or(1);
                if let Some(data) = body.get(4..) {
                    if let Some(s) = dissect(lt, data) {
                        out.push(s);
                    }
                }
            }
            _ => {}
        }
        o += blen;
    }
    Ok(out)
}

fn dissect(linktype: u32, d: &[u8]) -> Option<TcpSeg> {
    let (ethertype, ip) = match linktype {
        1 => {
            let mut et = rd16(d, 12, false)?;
            let mut o = 14;
            while et == 0x8100 || et == 0x88a8 {
                et = rd16(d, o + 2, false)?;
                o += 4;
            }
            (et, d.get(o..)?)
        }
        113 => (rd16(d, 14, false)?, d.get(16..)?),
        276 => (rd16(d, 0, false)?, d.get(20..)?),
        0 | 108 => {
            let fam = rd32(d, 0, linktype == 0 && d.first() != Some(&0))?;
            let et = if fam == 2 { 0x0800 } else { 0x86dd };
            (et, d.get(4..)?)
        }
        12 | 14 | 101 | 228 | 229 => {
            let v = d.first()? >> 4;
            (if v == 4 { 0x0800 } else { 0x86dd }, d)
        }
        _ => return None,
    };
    let (src, dst, tcp) = match ethertype {
        0x0800 => {
            let ihl = usize::from(ip.first()? & 0x0f) * 4;
            if ip.get(9)? != &6 {
                return None;
            }
            let frag = rd16(ip, 6, false)?;
            if frag & 0x1fff != 0 {
                return None;
            }
            let total = usize::from(rd16(ip, 2, false)?).min(ip.len());
            let s: [u8; 4] = ip.get(12..16)?.try_into().ok()?;
            let t: [u8; 4] = ip.get(16..20)?.try_into().ok()?;
            (
                IpAddr::V4(Ipv4Addr::from(s)),
                IpAddr::V4(Ipv4Addr::from(t)),
                ip.get(ihl..total)?,
            )
        }
        0x86dd => {
            let plen = usize::from(rd16(ip, 4, false)?);
            let mut nh = *ip.get(6)?;
            let s: [u8; 16] = ip.get(8..24)?.try_into().ok()?;
            let t: [u8; 16] = ip.get(24..40)?.try_into().ok()?;
            let end = (40 + plen).min(ip.len());
            let mut o = 40;
            while matches!(nh, 0 | 43 | 44 | 60) {
                if nh == 44 {
                    let off = rd16(ip, o + 2, false)?;
                    if off & 0xfff8 != 0 {
                        return None;
                    }
                    nh = *ip.get(o)?;
                    o += 8;
                } else {
                    nh = *ip.get(o)?;
                    o += (usize::from(*ip.get(o + 1)?) + 1) * 8;
                }
            }
            if nh != 6 {
                return None;
            }
            (
                IpAddr::V6(Ipv6Addr::from(s)),
                IpAddr::V6(Ipv6Addr::from(t)),
                ip.get(o..end)?,
            )
        }
        _ => return None,
    };
    let sport = rd16(tcp, 0, false)?;
    let dport = rd16(tcp, 2, false)?;
    let seq = rd32(tcp, 4, false)?;
    let doff = usize::from(tcp.get(12)? >> 4) * 4;
    let flags = *tcp.get(13)?;
    Some(TcpSeg {
        flow: Flow {
            src,
            sport,
            dst,
            dport,
        },
        seq,
        syn: flags & 0x02 != 0,
        payload: tcp.get(doff..)?.to_vec(),
    })
}

/// The reassembled byte stream of one direction.
#[derive(Debug)]
pub struct Stream {
    pub flow: Flow,
    pub data: Vec<u8>,
    /// True when a hole stopped reassembly before the end of the capture.
    pub gap: bool,
}

/// Reassembles every direction, in order of first appearance.
pub fn reassemble(segs: &[TcpSeg]) -> Vec<Stream> {
    struct St {
        base: Option<u32>,
        segs: BTreeMap<u64, Vec<u8>>,
        order: usize,
    }
    let mut flows: BTreeMap<Flow, St> = BTreeMap::new();
    for (i, s) in segs.iter().enumerate() {
        let st = flows.entry(s.flow).or_insert(St {
            base: None,
            segs: BTreeMap::new(),
            order: i,
        });
        if s.syn {
            st.base = Some(s.seq.wrapping_add(1));
            st.segs.retain(|_, _| false);
        }
        if s.payload.is_empty() {
            continue;
        }
        let base = *st.base.get_or_insert(s.seq);
        let seq = if s.syn { s.seq.wrapping_add(1) } else { s.seq };
        let rel = seq.wrapping_sub(base);
        if rel >= 0x8000_0000 {
            continue;
        }
        let e = st.segs.entry(u64::from(rel)).or_default();
        if s.payload.len() > e.len() {
            *e = s.payload.clone();
        }
    }
    let mut v: Vec<(usize, Stream)> = flows
        .into_iter()
        .map(|(flow, st)| {
            let mut data = Vec::new();
            let mut gap = false;
            for (k, p) in st.segs {
                let next = data.len() as u64;
                if k > next {
                    gap = true;
                    break;
                }
                let skip = (next - k) as usize;
                if skip < p.len() {
                    data.extend_from_slice(&p[skip..]);
                }
            }
            (st.order, Stream { flow, data, gap })
        })
        .collect();
    v.sort_by_key(|x| x.0);
    v.into_iter().map(|x| x.1).collect()
}
