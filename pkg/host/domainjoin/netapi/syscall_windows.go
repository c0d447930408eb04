package netapi

// The calls; mkwinsyscall turns each //sys line into a function of
// zsyscall_windows.go that returns the NET_API_STATUS as an error.

//sys	NetJoinDomain(server *uint16, domain *uint16, accountOU *uint16, account *uint16, password *uint16, options uint32) (neterr error) = netapi32.NetJoinDomain
//sys	NetRequestOfflineDomainJoin(provisionBinData *byte, provisionBinDataSize uint32, options uint32, windowsPath *uint16) (neterr error) = netapi32.NetRequestOfflineDomainJoin
