//! proptest strategies for whole messages: flow, group and meter mods,
//! ports, statistics requests and replies, table features, and any message.

use super::*;

pub fn flow_mod_with(
    m: BoxedStrategy<Match>,
    ins: BoxedStrategy<Vec<Instruction>>,
) -> impl Strategy<Value = FlowMod> {
    (
        (
            any::<u64>(),
            any::<u64>(),
            any::<u8>(),
            0u8..5,
            any::<u16>(),
            any::<u16>(),
            any::<u16>(),
        ),
        (any::<u32>(), port(), any::<u32>(), any::<u16>()),
        m,
        ins,
    )
        .prop_map(
            |(
                (cookie, cookie_mask, table_id, cmd, idle, hard, prio),
                (buffer_id, out_port, out_group, flags),
                match_,
                instructions,
            )| FlowMod {
                cookie,
                cookie_mask,
                table_id,
                command: FlowModCommand::from(cmd),
                idle_timeout: idle,
                hard_timeout: hard,
                priority: prio,
                buffer_id,
                out_port,
                out_group,
                flags,
                match_,
                instructions,
            },
        )
}

pub fn flow_mod() -> impl Strategy<Value = FlowMod> {
    flow_mod_with(wire_match().boxed(), vec(instruction(), 0..4).boxed())
}

pub fn bucket() -> impl Strategy<Value = Bucket> {
    (any::<u16>(), port(), any::<u32>(), vec(action(), 0..3)).prop_map(
        |(weight, watch_port, watch_group, actions)| Bucket {
            bucket_id: BUCKET_ALL,
            weight,
            watch_port,
            watch_group,
            actions,
        },
    )
}

pub fn canonical_bucket() -> impl Strategy<Value = Bucket> {
    (
        any::<u16>(),
        port(),
        any::<u32>(),
        vec(canonical_action(), 0..3),
    )
        .prop_map(|(weight, watch_port, watch_group, actions)| Bucket {
            bucket_id: BUCKET_ALL,
            weight,
            watch_port,
            watch_group,
            actions,
        })
}

/// Buckets numbered as OpenFlow 1.1-1.4 read them: 0, 1, ...
pub fn numbered(mut v: Vec<Bucket>) -> Vec<Bucket> {
    for (i, b) in v.iter_mut().enumerate() {
        b.bucket_id = i as u32;
    }
    v
}

/// A group mod as OpenFlow 1.3 carries it (ADD, MODIFY or DELETE; buckets
/// numbered in order; no selection method).
pub fn group_mod_with(b: BoxedStrategy<Bucket>) -> impl Strategy<Value = GroupMod> {
    (0u16..3, 0u8..4, any::<u32>(), vec(b, 0..4)).prop_map(|(c, t, group_id, buckets)| {
        GroupMod::new(
            GroupModCommand::from(c),
            GroupType::from(t),
            group_id,
            numbered(buckets),
        )
    })
}

/// Distinct bucket ids, each at most OFPG15_BUCKET_MAX, for `v`: small
/// ones, large ones, or none at all (text without `bucket_id:`).
pub fn with_ids(v: Vec<Bucket>) -> impl Strategy<Value = Vec<Bucket>> {
    let n = v.len();
    (
        0u8..3,
        proptest::collection::btree_set(0u32..=BUCKET_MAX, n..=n),
    )
        .prop_flat_map(|(style, ids)| {
            (
                Just(style),
                Just(ids.into_iter().collect::<Vec<u32>>()).prop_shuffle(),
            )
        })
        .prop_map(move |(style, ids)| {
            let mut v = v.clone();
            for (i, b) in v.iter_mut().enumerate() {
                b.bucket_id = match style {
                    0 => i as u32 * 3 + 1,
                    1 => ids[i],
                    _ => BUCKET_ALL,
                };
            }
            v
        })
}

/// A field Open vSwitch hashes, with a mask it takes that text can say:
/// the whole field, or (maskable fields written as numbers or addresses)
/// any bits but none.
pub fn hash_field() -> impl Strategy<Value = HashField> {
    let fields: Vec<OxmField> = OxmField::KNOWN
        .iter()
        .chain(OxmField::NICIRA)
        .chain(OxmField::CT)
        .copied()
        .filter(|f| selection::ovs_field(*f).is_some())
        .collect();
    (
        proptest::sample::select(fields),
        any::<u128>(),
        any::<bool>(),
    )
        .prop_map(|(f, m, whole)| {
            let maskable = selection::ovs_field(f).is_some_and(|x| x.2);
            let plain = matches!(
                f.info().map(|i| i.kind),
                Some(
                    ValueKind::Dec
                        | ValueKind::Hex
                        | ValueKind::Mac
                        | ValueKind::Ipv4
                        | ValueKind::Ipv6
                )
            );
            let m = m & f.width_mask();
            if whole || !maskable || !plain || m == 0 {
                HashField::whole(f)
            } else {
                HashField { field: f, mask: m }
            }
        })
}

/// A selection method: dp_hash, or hash with fields (each once, in Open
/// vSwitch's order).
pub fn selection_method() -> impl Strategy<Value = SelectionMethod> {
    (any::<bool>(), any::<u64>(), vec(hash_field(), 0..4)).prop_map(|(dp, param, fields)| {
        let mut seen = std::collections::BTreeSet::new();
        let mut fields: Vec<HashField> = fields
            .into_iter()
            .filter(|h| seen.insert(h.field))
            .collect();
        selection::canonical_order(&mut fields);
        SelectionMethod {
            method: if dp { Method::DpHash } else { Method::Hash },
            param,
            fields: if dp { Vec::new() } else { fields },
        }
    })
}

/// A group mod OpenFlow 1.5 takes: any of its five commands with a
/// `command_bucket_id` the command takes, bucket ids distinct (or none
/// given), a selection method only in a select group's ADD or MODIFY.
pub fn group_mod15_with(b: BoxedStrategy<Bucket>) -> impl Strategy<Value = GroupMod> {
    let commands = [
        GroupModCommand::Add,
        GroupModCommand::Modify,
        GroupModCommand::Delete,
        GroupModCommand::InsertBucket,
        GroupModCommand::RemoveBucket,
    ];
    (
        proptest::sample::select(commands.to_vec()),
        0u8..4,
        any::<u32>(),
        vec(b, 0..4).prop_flat_map(with_ids),
        prop_oneof![
            Just(BUCKET_FIRST),
            Just(BUCKET_LAST),
            Just(BUCKET_ALL),
            0u32..=BUCKET_MAX
        ],
        proptest::option::of(selection_method()),
    )
        .prop_map(|(command, t, group_id, buckets, cbid, selection)| {
            let group_type = GroupType::from(t);
            let command_bucket_id = match command {
                GroupModCommand::InsertBucket if cbid == BUCKET_ALL => BUCKET_LAST,
                GroupModCommand::InsertBucket | GroupModCommand::RemoveBucket => cbid,
                _ => BUCKET_ALL,
            };
            let with_method = group_type == GroupType::Select
                && matches!(command, GroupModCommand::Add | GroupModCommand::Modify);
            GroupMod {
                command,
                group_type,
                group_id,
                command_bucket_id,
                buckets,
                selection: selection.filter(|_| with_method),
            }
        })
}

/// A group description as OpenFlow 1.5 writes it.
pub fn group_desc15() -> impl Strategy<Value = GroupDesc> {
    (
        0u8..4,
        any::<u32>(),
        vec(canonical_bucket(), 0..3).prop_flat_map(with_ids),
        proptest::option::of(selection_method()),
    )
        .prop_map(|(t, group_id, buckets, selection)| {
            let group_type = GroupType::from(t);
            GroupDesc {
                group_type,
                group_id,
                buckets,
                selection: selection.filter(|_| group_type == GroupType::Select),
            }
        })
}

pub fn band() -> impl Strategy<Value = MeterBand> {
    prop_oneof![
        (any::<u32>(), any::<u32>())
            .prop_map(|(rate, burst_size)| MeterBand::Drop { rate, burst_size }),
        (any::<u32>(), any::<u32>(), any::<u8>()).prop_map(|(rate, burst_size, prec_level)| {
            MeterBand::DscpRemark {
                rate,
                burst_size,
                prec_level,
            }
        }),
        (any::<u32>(), any::<u32>(), any::<u32>(), bytes8(2)).prop_map(
            |(rate, burst_size, experimenter, data)| {
                MeterBand::Experimenter {
                    rate,
                    burst_size,
                    experimenter,
                    data,
                }
            }
        ),
    ]
}

pub fn meter_mod() -> impl Strategy<Value = MeterMod> {
    (0u16..3, 0u16..16, any::<u32>(), vec(band(), 0..4)).prop_map(|(c, flags, meter_id, bands)| {
        MeterMod {
            command: MeterModCommand::from(c),
            flags,
            meter_id,
            bands,
        }
    })
}

pub fn fixed<const N: usize>() -> impl Strategy<Value = FixedStr<N>> {
    "[a-z0-9 ]{0,12}".prop_map(|s| FixedStr::new(&s))
}

pub fn port_desc() -> impl Strategy<Value = PortDesc> {
    (
        any::<u32>(),
        any::<[u8; 6]>(),
        fixed::<16>(),
        any::<[u32; 8]>(),
    )
        .prop_map(|(port_no, hw_addr, name, v)| PortDesc {
            port_no,
            hw_addr,
            name,
            config: v[0],
            state: v[1],
            curr: v[2],
            advertised: v[3],
            supported: v[4],
            peer: v[5],
            curr_speed: v[6],
            max_speed: v[7],
        })
}

pub fn flow_stats_request() -> impl Strategy<Value = FlowStatsRequest> {
    (
        any::<u8>(),
        port(),
        any::<u32>(),
        any::<u64>(),
        any::<u64>(),
        wire_match(),
    )
        .prop_map(
            |(table_id, out_port, out_group, cookie, cookie_mask, match_)| FlowStatsRequest {
                table_id,
                out_port,
                out_group,
                cookie,
                cookie_mask,
                match_,
            },
        )
}

pub fn experimenter_msg() -> impl Strategy<Value = ExperimenterMsg> {
    (any::<u32>(), any::<u32>(), bytes_any(16)).prop_map(|(experimenter, exp_type, data)| {
        ExperimenterMsg {
            experimenter,
            exp_type,
            data,
        }
    })
}

pub fn type_ids() -> impl Strategy<Value = Vec<TypeId>> {
    vec(
        (any::<u16>(), prop_oneof![Just(Bytes::new()), bytes8(1)])
            .prop_map(|(ty, data)| TypeId { ty, data }),
        0..4,
    )
}

pub fn table_feature_prop() -> impl Strategy<Value = TableFeatureProp> {
    prop_oneof![
        (0u16..2, type_ids()).prop_map(|(ty, ids)| TableFeatureProp::Instructions { ty, ids }),
        (2u16..4, vec(any::<u8>(), 0..10))
            .prop_map(|(ty, tables)| TableFeatureProp::NextTables { ty, tables }),
        (4u16..8, type_ids()).prop_map(|(ty, ids)| TableFeatureProp::Actions { ty, ids }),
        (
            prop_oneof![
                Just(prop_type::MATCH),
                Just(prop_type::WILDCARDS),
                12u16..16
            ],
            vec(
                prop_oneof![
                    (0u8..40, any::<bool>()).prop_map(|(f, m)| OxmId {
                        header: OxmField::from(f).header(m),
                        experimenter: None
                    }),
                    any::<u32>().prop_map(|e| OxmId {
                        header: 0xffff_0004,
                        experimenter: Some(e)
                    }),
                ],
                0..6
            )
        )
            .prop_map(|(ty, ids)| TableFeatureProp::Oxms { ty, ids }),
        (
            0xfffeu16..=0xffff,
            any::<u32>(),
            any::<u32>(),
            bytes_any(10)
        )
            .prop_map(|(ty, experimenter, exp_type, data)| {
                TableFeatureProp::Experimenter {
                    ty,
                    experimenter,
                    exp_type,
                    data,
                }
            }),
    ]
}

pub fn table_features() -> impl Strategy<Value = TableFeatures> {
    (
        any::<u8>(),
        fixed::<32>(),
        any::<u64>(),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
        vec(table_feature_prop(), 0..5),
    )
        .prop_map(
            |(table_id, name, metadata_match, metadata_write, config, max_entries, properties)| {
                TableFeatures {
                    table_id,
                    name,
                    metadata_match,
                    metadata_write,
                    config,
                    max_entries,
                    properties,
                }
            },
        )
}

pub fn mp_request() -> impl Strategy<Value = MultipartRequest> {
    use MultipartRequestBody as B;
    let body = prop_oneof![
        Just(B::Desc),
        flow_stats_request().prop_map(B::Flow),
        flow_stats_request().prop_map(B::Aggregate),
        Just(B::Table),
        any::<u32>().prop_map(|port_no| B::PortStats { port_no }),
        (any::<u32>(), any::<u32>()).prop_map(|(port_no, queue_id)| B::Queue { port_no, queue_id }),
        any::<u32>().prop_map(|group_id| B::Group { group_id }),
        Just(B::GroupDesc),
        Just(B::GroupFeatures),
        any::<u32>().prop_map(|meter_id| B::Meter { meter_id }),
        any::<u32>().prop_map(|meter_id| B::MeterConfig { meter_id }),
        Just(B::MeterFeatures),
        vec(table_features(), 0..3).prop_map(B::TableFeatures),
        Just(B::PortDesc),
        experimenter_msg().prop_map(B::Experimenter),
    ];
    (any::<u16>(), body).prop_map(|(flags, body)| MultipartRequest { flags, body })
}

pub fn flow_stats() -> impl Strategy<Value = FlowStats> {
    (
        any::<(u8, u32, u32, u16, u16, u16, u16)>(),
        any::<(u64, u64, u64)>(),
        wire_match(),
        vec(instruction(), 0..3),
    )
        .prop_map(
            |(
                (table_id, ds, dn, priority, idle, hard, flags),
                (cookie, pc, bc),
                match_,
                instructions,
            )| FlowStats {
                idle_age: None,
                hard_age: None,
                table_id,
                duration_sec: ds,
                duration_nsec: dn,
                priority,
                idle_timeout: idle,
                hard_timeout: hard,
                flags,
                cookie,
                packet_count: pc,
                byte_count: bc,
                match_,
                instructions,
            },
        )
}

pub fn mp_reply() -> impl Strategy<Value = MultipartReply> {
    use MultipartReplyBody as B;
    let body = prop_oneof![
        (
            fixed::<256>(),
            fixed::<256>(),
            fixed::<256>(),
            fixed::<32>(),
            fixed::<256>()
        )
            .prop_map(|(a, b, c, d, e)| {
                B::Desc(Box::new(Desc {
                    mfr_desc: a,
                    hw_desc: b,
                    sw_desc: c,
                    serial_num: d,
                    dp_desc: e,
                }))
            }),
        vec(flow_stats(), 0..3).prop_map(B::Flow),
        any::<(u64, u64, u32)>().prop_map(|(p, b, f)| B::Aggregate(AggregateStats {
            packet_count: p,
            byte_count: b,
            flow_count: f
        })),
        vec(
            any::<(u8, u32, u64, u64)>().prop_map(|(t, a, l, m)| TableStats {
                table_id: t,
                name: Default::default(),
                active_count: a,
                lookup_count: l,
                matched_count: m
            }),
            0..4
        )
        .prop_map(B::Table),
        vec(
            (any::<u32>(), any::<[u64; 12]>(), any::<(u32, u32)>())
                .prop_map(|(port_no, c, d)| PortStats::with_counters(port_no, c, d)),
            0..3
        )
        .prop_map(B::PortStats),
        vec(
            any::<(u32, u32, u64, u64, u64, u32, u32)>().prop_map(|(p, q, b, k, e, s, n)| {
                QueueStats {
                    port_no: p,
                    queue_id: q,
                    tx_bytes: b,
                    tx_packets: k,
                    tx_errors: e,
                    duration_sec: s,
                    duration_nsec: n,
                }
            }),
            0..3
        )
        .prop_map(B::Queue),
        vec(
            (
                any::<(u32, u32, u64, u64, u32, u32)>(),
                vec(any::<(u64, u64)>(), 0..3)
            )
                .prop_map(|((g, r, p, b, s, n), bs)| GroupStats {
                    group_id: g,
                    ref_count: r,
                    packet_count: p,
                    byte_count: b,
                    duration_sec: s,
                    duration_nsec: n,
                    bucket_stats: bs
                        .into_iter()
                        .map(|(packet_count, byte_count)| BucketCounter {
                            packet_count,
                            byte_count
                        })
                        .collect(),
                }),
            0..3
        )
        .prop_map(B::Group),
        vec(
            (0u8..4, any::<u32>(), vec(bucket(), 0..3)).prop_map(|(t, group_id, buckets)| {
                GroupDesc {
                    group_type: GroupType::from(t),
                    group_id,
                    buckets: numbered(buckets),
                    selection: None,
                }
            }),
            0..3
        )
        .prop_map(B::GroupDesc),
        any::<(u32, u32, [u32; 4], [u32; 4])>().prop_map(
            |(types, capabilities, max_groups, actions)| {
                B::GroupFeatures(GroupFeatures {
                    types,
                    capabilities,
                    max_groups,
                    actions,
                })
            }
        ),
        vec(
            (
                any::<(u32, u32, u64, u64, u32, u32)>(),
                vec(any::<(u64, u64)>(), 0..3)
            )
                .prop_map(|((m, f, p, b, s, n), bs)| MeterStats {
                    meter_id: m,
                    flow_count: f,
                    packet_in_count: p,
                    byte_in_count: b,
                    duration_sec: s,
                    duration_nsec: n,
                    band_stats: bs
                        .into_iter()
                        .map(|(p, b)| MeterBandStats {
                            packet_band_count: p,
                            byte_band_count: b
                        })
                        .collect(),
                }),
            0..3
        )
        .prop_map(B::Meter),
        vec(
            (any::<u16>(), any::<u32>(), vec(band(), 0..3)).prop_map(|(flags, meter_id, bands)| {
                MeterConfig {
                    flags,
                    meter_id,
                    bands,
                }
            }),
            0..3
        )
        .prop_map(B::MeterConfig),
        any::<(u32, u32, u32, u8, u8)>().prop_map(|(a, b, c, d, e)| B::MeterFeatures(
            MeterFeatures {
                max_meter: a,
                band_types: b,
                capabilities: c,
                max_bands: d,
                max_color: e,
            }
        )),
        vec(table_features(), 0..3).prop_map(B::TableFeatures),
        vec(port_desc(), 0..3).prop_map(B::PortDesc),
        experimenter_msg().prop_map(B::Experimenter),
    ];
    (any::<u16>(), body).prop_map(|(flags, body)| MultipartReply { flags, body })
}

pub fn error_code() -> impl Strategy<Value = ErrorCode> {
    (
        prop_oneof![0u16..14, Just(0xffff), any::<u16>()],
        0u16..20,
        any::<u32>(),
    )
        .prop_map(|(t, c, e)| ErrorCode::from_wire(t, c, if t == 0xffff { e } else { 0 }))
}

pub fn hello() -> impl Strategy<Value = Hello> {
    (
        1u8..8,
        vec(
            prop_oneof![
                vec(any::<u32>(), 0..3).prop_map(HelloElem::VersionBitmap),
                (2u16..100, bytes8(2)).prop_map(|(ty, d)| HelloElem::Unknown {
                    ty,
                    data: d.slice(..d.len().saturating_sub(4))
                })
            ],
            0..3,
        ),
    )
        .prop_map(|(version, elements)| Hello { version, elements })
}

pub fn queue() -> impl Strategy<Value = PacketQueue> {
    (
        any::<u32>(),
        any::<u32>(),
        vec(
            prop_oneof![
                any::<u16>().prop_map(QueueProp::MinRate),
                any::<u16>().prop_map(QueueProp::MaxRate),
                (any::<u32>(), bytes8(2)).prop_map(|(experimenter, data)| {
                    QueueProp::Experimenter { experimenter, data }
                }),
            ],
            0..3,
        ),
    )
        .prop_map(|(queue_id, port, properties)| PacketQueue {
            queue_id,
            port,
            properties,
        })
}

/// Any message.
pub fn message() -> impl Strategy<Value = Message> {
    use Message as M;
    prop_oneof![
        hello().prop_map(M::Hello),
        (error_code(), bytes_any(64)).prop_map(|(code, data)| M::Error(ErrorMsg { code, data })),
        bytes_any(32).prop_map(M::EchoRequest),
        bytes_any(32).prop_map(M::EchoReply),
        experimenter_msg().prop_map(M::Experimenter),
        Just(M::FeaturesRequest),
        any::<(u64, u32, u8, u8, u32, u32)>().prop_map(|(d, b, t, a, c, r)| M::FeaturesReply(
            FeaturesReply {
                datapath_id: d,
                n_buffers: b,
                n_tables: t,
                auxiliary_id: a,
                capabilities: c,
                reserved: r,
                ports: Vec::new(),
            }
        )),
        Just(M::GetConfigRequest),
        any::<(u16, u16)>().prop_map(|(flags, miss_send_len)| M::GetConfigReply(SwitchConfig {
            flags,
            miss_send_len
        })),
        any::<(u16, u16)>().prop_map(|(flags, miss_send_len)| M::SetConfig(SwitchConfig {
            flags,
            miss_send_len
        })),
        (
            any::<(u32, u16, u8, u8, u64)>(),
            wire_match(),
            bytes_any(100)
        )
            .prop_map(|((b, t, r, tb, c), m, d)| M::PacketIn(PacketIn {
                buffer_id: b,
                total_len: t,
                reason: PacketInReason::from(r),
                table_id: tb,
                cookie: c,
                match_: m,
                data: d,
            })),
        (
            any::<(u64, u16, u8, u8, u32, u32)>(),
            any::<(u16, u16, u64, u64)>(),
            wire_match()
        )
            .prop_map(|((c, p, r, t, ds, dn), (i, h, pc, bc), m)| M::FlowRemoved(
                FlowRemoved {
                    cookie: c,
                    priority: p,
                    reason: FlowRemovedReason::from(r),
                    table_id: t,
                    duration_sec: ds,
                    duration_nsec: dn,
                    idle_timeout: i,
                    hard_timeout: h,
                    packet_count: pc,
                    byte_count: bc,
                    match_: m,
                }
            )),
        (0u8..4, port_desc()).prop_map(|(r, desc)| M::PortStatus(PortStatus {
            reason: PortReason::from(r),
            desc
        })),
        (any::<u32>(), port(), vec(action(), 0..4), bytes_any(100)).prop_map(
            |(buffer_id, in_port, actions, data)| M::PacketOut(PacketOut {
                buffer_id,
                in_port,
                actions,
                data
            })
        ),
        flow_mod().prop_map(M::FlowMod),
        group_mod_with(bucket().boxed()).prop_map(M::GroupMod),
        (any::<u32>(), any::<[u8; 6]>(), any::<(u32, u32, u32)>()).prop_map(
            |(port_no, hw_addr, (config, mask, advertise))| {
                M::PortMod(PortMod {
                    port_no,
                    hw_addr,
                    config,
                    mask,
                    advertise,
                })
            }
        ),
        any::<(u8, u32)>()
            .prop_map(|(table_id, config)| M::TableMod(TableMod { table_id, config })),
        mp_request().prop_map(M::MultipartRequest),
        mp_reply().prop_map(M::MultipartReply),
        Just(M::BarrierRequest),
        Just(M::BarrierReply),
        any::<u32>().prop_map(|port| M::QueueGetConfigRequest { port }),
        (any::<u32>(), vec(queue(), 0..3)).prop_map(|(port, queues)| M::QueueGetConfigReply(
            QueueGetConfigReply { port, queues }
        )),
        (0u32..4, any::<u64>()).prop_map(|(r, g)| M::RoleRequest(Role {
            role: ControllerRole::from(r),
            generation_id: g
        })),
        (0u32..4, any::<u64>()).prop_map(|(r, g)| M::RoleReply(Role {
            role: ControllerRole::from(r),
            generation_id: g
        })),
        Just(M::GetAsyncRequest),
        any::<[u32; 6]>().prop_map(|a| M::GetAsyncReply(AsyncConfig {
            packet_in_mask: [a[0], a[1]],
            port_status_mask: [a[2], a[3]],
            flow_removed_mask: [a[4], a[5]],
        })),
        any::<[u32; 6]>().prop_map(|a| M::SetAsync(AsyncConfig {
            packet_in_mask: [a[0], a[1]],
            port_status_mask: [a[2], a[3]],
            flow_removed_mask: [a[4], a[5]],
        })),
        meter_mod().prop_map(M::MeterMod),
    ]
}
