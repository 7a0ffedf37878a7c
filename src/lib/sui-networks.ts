/** Published ledger deployments (domain.md), used as defaults per SUI_NETWORK. */
export const SUI_NETWORKS = {
  mainnet: {
    graphqlUrl: 'https://graphql.mainnet.sui.io/graphql',
    knsPackageId: '0x66dd6f65ebad8911bd196749098bfe6ef826049cef4086c5929863a5a30c93ef',
    mapPackageId: '0x29f7c3fb2152fad673fe6a79a949a18bd42bf09397b0cac910dbb4e791080871',
    keystorePackageId: '0x78b8c91ec5321bce57bdcbf12c8a2d7b5055afcff63ccf5572926ee197801520',
    idMapObjectId: '0x6d0c613c6c2db4e1e839ea552f93597cb76d4028af2218356f5b8b9fb0b77cb8',
    idMapTableId: '0x8fbb2a81daa43f9592d693a2ee6e1e6e3c8fed1d644581f2802e9c916db12d57',
  },
  testnet: {
    graphqlUrl: 'https://graphql.testnet.sui.io/graphql',
    knsPackageId: '0x695fa0bd4395696074c4b9e8d2122e40664c0a78842c356095ed28ccdc04a802',
    mapPackageId: '0xa3f54fe10970b044d3d8b534f14274c3e3c762b96bfe576281ffcec89835fe1c',
    keystorePackageId: '0x0f5ec6674ecb24cbf96b2211fea94c491afebf8bc21f284170aaa880a1ac17fb',
    idMapObjectId: '0x75250ff5c84aba97a03505c4eb131156f83fe8e7969806fcd8771ff4d59edbea',
    idMapTableId: '0x655fc0ea86e13e030829b0824bb141d0c370825cbf57aa9a95d80dbf592b4e43',
  },
} as const

export type SuiNetwork = keyof typeof SUI_NETWORKS
