import ENCore
import ENStore

/// What the radio agent keeps in storage: the interval on the air (a setting), the sightings and
/// the scans (`AgentStore.record(_:scans:)`).
public protocol RadioAgentStore: SettingStore {
    func record(_ sightings: MergedSightings, scans: [ClosedRange<Int64>]) throws(StoreError)
}

extension AgentStore: RadioAgentStore {}
