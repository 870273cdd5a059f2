package firebirdsql

type BackupManager struct {
	connBuilder func() (*ServiceManager, error)
}

type BackupOptions struct {
	IgnoreChecksums                       bool
	IgnoreLimboTransactions               bool
	MetadataOnly                          bool
	GarbageCollect                        bool
	Transportable                         bool
	ConvertExternalTablesToInternalTables bool
	Expand                                bool
	Zip                                   bool
	ParallelWorkers                       int32
}

type BackupOption func(*BackupOptions)

type RestoreOptions struct {
	Replace              bool
	DeactivateIndexes    bool
	RestoreShadows       bool
	EnforceConstraints   bool
	CommitAfterEachTable bool
	UseAllPageSpace      bool
	PageSize             int32
	CacheBuffers         int32
	ParallelWorkers      int32
}

type RestoreOption func(*RestoreOptions)

func GetDefaultBackupOptions() BackupOptions {
	return BackupOptions{
		IgnoreChecksums:                       false,
		IgnoreLimboTransactions:               false,
		MetadataOnly:                          false,
		GarbageCollect:                        true,
		Transportable:                         true,
		ConvertExternalTablesToInternalTables: true,
		Expand:                                false,
		Zip:                                   false,
		ParallelWorkers:                       0,
	}
}

func WithIgnoreChecksums() BackupOption {
	return func(opts *BackupOptions) {
		opts.IgnoreChecksums = true
	}
}

func WithoutIgnoreChecksums() BackupOption {
	return func(opts *BackupOptions) {
		opts.IgnoreChecksums = false
	}
}

func WithIgnoreLimboTransactions() BackupOption {
	return func(opts *BackupOptions) {
		opts.IgnoreLimboTransactions = true
	}
}

func WithoutIgnoreLimboTransactions() BackupOption {
	return func(opts *BackupOptions) {
		opts.IgnoreLimboTransactions = false
	}
}

func WithMetadataOnly() BackupOption {
	return func(opts *BackupOptions) {
		opts.MetadataOnly = true
	}
}

func WithoutMetadataOnly() BackupOption {
	return func(opts *BackupOptions) {
		opts.MetadataOnly = false
	}
}

func WithGarbageCollect() BackupOption {
	return func(opts *BackupOptions) {
		opts.GarbageCollect = true
	}
}

func WithoutGarbageCollect() BackupOption {
	return func(opts *BackupOptions) {
		opts.GarbageCollect = false
	}
}

func WithTransportable() BackupOption {
	return func(opts *BackupOptions) {
		opts.Transportable = true
	}
}

func WithoutTransportable() BackupOption {
	return func(opts *BackupOptions) {
		opts.Transportable = false
	}
}

func WithConvertExternalTablesToInternalTables() BackupOption {
	return func(opts *BackupOptions) {
		opts.ConvertExternalTablesToInternalTables = true
	}
}

func WithoutConvertExternalTablesToInternalTables() BackupOption {
	return func(opts *BackupOptions) {
		opts.ConvertExternalTablesToInternalTables = false
	}
}

func WithExpand() BackupOption {
	return func(opts *BackupOptions) {
		opts.Expand = true
	}
}

func WithoutExpand() BackupOption {
	return func(opts *BackupOptions) {
		opts.Expand = false
	}
}

func WithZip() BackupOption {
	return func(opts *BackupOptions) {
		opts.Zip = true
	}
}

func WithoutZip() BackupOption {
	return func(opts *BackupOptions) {
		opts.Zip = false
	}
}

func WithBackupParallelWorkers(parallelWorkers int32) BackupOption {
	return func(opts *BackupOptions) {
		opts.ParallelWorkers = parallelWorkers
	}
}

func WithoutBackupParallelWorkers() BackupOption {
	return func(opts *BackupOptions) {
		opts.ParallelWorkers = 0
	}
}

func NewBackupOptions(opts ...BackupOption) BackupOptions {
	res := GetDefaultBackupOptions()
	for _, opt := range opts {
		opt(&res)
	}
	return res
}

func GetDefaultRestoreOptions() RestoreOptions {
	return RestoreOptions{
		Replace:              false,
		DeactivateIndexes:    false,
		RestoreShadows:       true,
		EnforceConstraints:   true,
		CommitAfterEachTable: false,
		UseAllPageSpace:      false,
		PageSize:             0,
		CacheBuffers:         0,
		ParallelWorkers:      0,
	}
}

func WithReplace() RestoreOption {
	return func(opts *RestoreOptions) {
		opts.Replace = true
	}
}

func WithoutReplace() RestoreOption {
	return func(opts *RestoreOptions) {
		opts.Replace = false
	}
}

func WithDeactivateIndexes() RestoreOption {
	return func(opts *RestoreOptions) {
		opts.DeactivateIndexes = true
	}
}

func WithRestoreShadows() RestoreOption {
	return func(opts *RestoreOptions) {
		opts.RestoreShadows = true
	}
}

func WithoutRestoreShadows() RestoreOption {
	return func(opts *RestoreOptions) {
		opts.RestoreShadows = false
	}
}

func WithEnforceConstraints() RestoreOption {
	return func(opts *RestoreOptions) {
		opts.EnforceConstraints = true
	}
}

func WithoutEnforceConstraints() RestoreOption {
	return func(opts *RestoreOptions) {
		opts.EnforceConstraints = false
	}
}

func WithCommitAfterEachTable() RestoreOption {
	return func(opts *RestoreOptions) {
		opts.CommitAfterEachTable = true
	}
}

func WithoutCommitAfterEachTable() RestoreOption {
	return func(opts *RestoreOptions) {
		opts.CommitAfterEachTable = false
	}
}

func WithUseAllPageSpace() RestoreOption {
	return func(opts *RestoreOptions) {
		opts.UseAllPageSpace = true
	}
}

func WithoutUseAllPageSpace() RestoreOption {
	return func(opts *RestoreOptions) {
		opts.UseAllPageSpace = false
	}
}

func WithPageSize(pageSize int32) RestoreOption {
	return func(opts *RestoreOptions) {
		opts.PageSize = pageSize
	}
}

func WithCacheBuffers(cacheBuffers int32) RestoreOption {
	return func(opts *RestoreOptions) {
		opts.CacheBuffers = cacheBuffers
	}
}

func WithRestoreParallelWorkers(parallelWorkers int32) RestoreOption {
	return func(opts *RestoreOptions) {
		opts.ParallelWorkers = parallelWorkers
	}
}

func WithoutRestoreParallelWorkers() RestoreOption {
	return func(opts *RestoreOptions) {
		opts.ParallelWorkers = 0
	}
}

func NewRestoreOptions(opts ...RestoreOption) RestoreOptions {
	res := GetDefaultRestoreOptions()
	for _, opt := range opts {
		opt(&res)
	}
	return res
}

func NewBackupManager(addr string, user string, password string, options ServiceManagerOptions) (*BackupManager, error) {
	connBuilder := func() (*ServiceManager, error) {
		return NewServiceManager(addr, user, password, options)
	}
	return &BackupManager{
		connBuilder: connBuilder,
	}, nil
}

func (bm *BackupManager) Backup(database string, backup string, options BackupOptions, verbose chan string) error {
	var optionsMask int32

	if options.IgnoreChecksums {
		optionsMask |= isc_spb_bkp_ignore_checksums
	}

	if options.IgnoreLimboTransactions {
		optionsMask |= isc_spb_bkp_ignore_limbo
	}

	if options.MetadataOnly {
		optionsMask |= isc_spb_bkp_metadata_only
	}

	if !options.GarbageCollect {
		optionsMask |= isc_spb_bkp_no_garbage_collect
	}

	if !options.Transportable {
		optionsMask |= isc_spb_bkp_non_transportable
	}

	if options.ConvertExternalTablesToInternalTables {
		optionsMask |= isc_spb_bkp_convert
	}

	if options.Expand {
		optionsMask |= isc_spb_bkp_expand
	}

	if options.Zip {
		optionsMask |= isc_spb_bkp_zip
	}

	spb := NewXPBWriterFromTag(isc_action_svc_backup)
	spb.PutString(isc_spb_dbname, database)
	spb.PutString(isc_spb_bkp_file, backup)
	spb.PutInt32(isc_spb_options, optionsMask)

	if options.ParallelWorkers > 0 {
		spb.PutInt32(isc_spb_bkp_parallel_workers, options.ParallelWorkers)
	}

	if verbose != nil {
		spb.PutTag(isc_spb_verbose)
	}

	return bm.attach(spb.Bytes(), verbose)
}

func (bm *BackupManager) Restore(backup string, database string, options RestoreOptions, verbose chan string) error {
	var optionsMask int32

	if options.Replace {
		optionsMask |= isc_spb_res_replace
	} else {
		optionsMask |= isc_spb_res_create
	}

	if options.DeactivateIndexes {
		optionsMask |= isc_spb_res_deactivate_idx
	}

	if !options.RestoreShadows {
		optionsMask |= isc_spb_res_no_shadow
	}

	if !options.EnforceConstraints {
		optionsMask |= isc_spb_res_no_validity
	}

	if options.CommitAfterEachTable {
		optionsMask |= isc_spb_res_one_at_a_time
	}

	if options.UseAllPageSpace {
		optionsMask |= isc_spb_res_use_all_space
	}

	spb := NewXPBWriterFromTag(isc_action_svc_restore)
	spb.PutString(isc_spb_dbname, database)
	spb.PutString(isc_spb_bkp_file, backup)
	spb.PutInt32(isc_spb_options, optionsMask)

	if options.ParallelWorkers > 0 {
		spb.PutInt32(isc_spb_res_parallel_workers, options.ParallelWorkers)
	}

	if verbose != nil {
		spb.PutTag(isc_spb_verbose)
	}

	if options.PageSize > 0 {
		spb.PutInt32(isc_spb_res_page_size, options.PageSize)
	}

	if options.CacheBuffers > 0 {
		spb.PutInt32(isc_spb_res_buffers, options.CacheBuffers)
	}

	return bm.attach(spb.Bytes(), verbose)
}

func (bm *BackupManager) attach(spb []byte, verbose chan string) error {
	return serviceAttach(bm.connBuilder, spb, verbose)
}
