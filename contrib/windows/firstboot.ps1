#ps1_sysnative
# machineadm first-boot stub, written by `machineadm render`: get the agent,
# verify it with Get-FileHash before it runs, write the machine spec into a
# directory only SYSTEM and Administrators can read, run `machineadm bootstrap`,
# and run it again after a reboot the domain join needs (startup task).
# With -AgentUrl empty the agent must already be at -AgentPath; with
# -SpecGzipBase64 and -PayloadUrl empty the spec must already be at -SpecPath.
param(
	[string]$AgentUrl = '',
	[string]$AgentSha256 = '',
	[string]$AgentPath = 'C:\Program Files\machineadm\machineadm.exe',
	[string]$SpecPath = 'C:\ProgramData\machineadm\spec.yaml',
	[string]$PayloadUrl = '',
	[string]$PayloadSha256 = '',
	[string]$SpecGzipBase64 = '',
	[string]$ReportPath = 'C:\ProgramData\machineadm\report.json'
)
$ErrorActionPreference = 'Stop'
$ProgressPreference = 'SilentlyContinue'
[Net.ServicePointManager]::SecurityProtocol = [Net.ServicePointManager]::SecurityProtocol -bor [Net.SecurityProtocolType]::Tls12
function Get-Setting([string]$Name, [int]$Default) {
	$v = [Environment]::GetEnvironmentVariable($Name)
	if ($v) { return [int]$v } else { return $Default }
}
$Attempts = Get-Setting 'MACHINEADM_FETCH_ATTEMPTS' 10
$Delay = Get-Setting 'MACHINEADM_FETCH_DELAY' 2
$Timeout = Get-Setting 'MACHINEADM_FETCH_TIMEOUT' 600
$Deadline = (Get-Date).AddSeconds($Timeout)
if ($env:MACHINEADM_PREFIX) {
	$SpecPath = Join-Path $env:MACHINEADM_PREFIX ($SpecPath -replace '^[A-Za-z]:', '')
	if ($AgentUrl) { $AgentPath = Join-Path $env:MACHINEADM_PREFIX ($AgentPath -replace '^[A-Za-z]:', '') }
}
function Write-Log([string]$Message) { Write-Host "machineadm-stub: $Message" }
function Get-Download([string]$Url, [string]$OutFile) {
	# Shown without its query string (a presigned URL's credential) or
	# user information.
	$shown = $Url -replace '\?.*$', '' -replace '^([A-Za-z][A-Za-z0-9+.-]*://)[^/@]*@', '$1'
	$wait = $Delay
	for ($i = 1; ; $i++) {
		$left = [Math]::Max(1, [int][Math]::Ceiling(($Deadline - (Get-Date)).TotalSeconds))
		Write-Log "${shown}: download attempt $i of $Attempts"
		try {
			Invoke-WebRequest -UseBasicParsing -Uri $Url -OutFile $OutFile -TimeoutSec $left
			return
		} catch {
			$why = $_.Exception.Message -replace '\?\S*', ''
			if ($i -ge $Attempts) { throw "${shown}: download failed $Attempts times: $why" }
			if (($Deadline - (Get-Date)).TotalSeconds -le $wait) { throw "${shown}: no download within $Timeout s: $why" }
			Write-Log "${shown}: attempt $i of $Attempts failed: $why; retrying in $wait s"
			Start-Sleep -Seconds $wait
			$wait = [Math]::Min($wait * 2, 60)
		}
	}
}
function Get-Sha256([string]$Path) { (Get-FileHash -Algorithm SHA256 -LiteralPath $Path).Hash.ToLowerInvariant() }
function Assert-Sha256([string]$Path, [string]$Expected, [string]$What, [switch]$Remove) {
	$actual = Get-Sha256 $Path
	if ($actual -ne $Expected.ToLowerInvariant()) {
		if ($Remove) { Remove-Item -Force -LiteralPath $Path }
		throw "${What}: SHA-256 digest is $actual, expected $Expected"
	}
}
if (-not $AgentUrl) {
	if (-not (Test-Path -LiteralPath $AgentPath -PathType Leaf)) { throw "${AgentPath}: no machineadm agent in the image" }
	if ($AgentSha256) { Assert-Sha256 $AgentPath $AgentSha256 $AgentPath }
} elseif (-not $AgentSha256) {
	throw 'AgentSha256 is required with AgentUrl: the agent is verified before it runs'
} elseif ((Test-Path -LiteralPath $AgentPath -PathType Leaf) -and ((Get-Sha256 $AgentPath) -eq $AgentSha256.ToLowerInvariant())) {
	Write-Log "$AgentPath is already the verified agent"
} else {
	New-Item -ItemType Directory -Force -Path (Split-Path -Parent $AgentPath) | Out-Null
	# A file of this process's own ($PID): a second stub started at the
	# same time never writes into the download this one checks and moves.
	$download = "$AgentPath.download.$PID"
	Get-Download $AgentUrl $download
	Assert-Sha256 $download $AgentSha256 'agent' -Remove
	Move-Item -Force -LiteralPath $download -Destination $AgentPath
}
$specDir = Split-Path -Parent $SpecPath
New-Item -ItemType Directory -Force -Path $specDir | Out-Null
# Only SYSTEM (S-1-5-18) and Administrators (S-1-5-32-544) may read the spec.
& icacls.exe $specDir /inheritance:r /grant:r '*S-1-5-18:(OI)(CI)F' '*S-1-5-32-544:(OI)(CI)F' | Out-Null
if ($LASTEXITCODE -ne 0) { throw "icacls $specDir failed with exit code $LASTEXITCODE" }
$specTmp = "$SpecPath.tmp.$PID"
if ($SpecGzipBase64) {
	$gz = [Convert]::FromBase64String($SpecGzipBase64)
	$in = New-Object IO.Compression.GZipStream((New-Object IO.MemoryStream(, $gz)), [IO.Compression.CompressionMode]::Decompress)
	$out = [IO.File]::Create($specTmp)
	try { $in.CopyTo($out) } finally { $out.Close(); $in.Close() }
	Move-Item -Force -LiteralPath $specTmp -Destination $SpecPath
} elseif ($PayloadUrl) {
	if (-not $PayloadSha256) { throw 'PayloadSha256 is required with PayloadUrl' }
	Get-Download $PayloadUrl $specTmp
	Assert-Sha256 $specTmp $PayloadSha256 'machine spec' -Remove
	Move-Item -Force -LiteralPath $specTmp -Destination $SpecPath
} elseif (-not (Test-Path -LiteralPath $SpecPath -PathType Leaf)) {
	throw "${SpecPath}: no machine spec"
}
# bootstrap runs from resume.ps1, also the action of the startup task
# machineadm-bootstrap: a domain join (spec.host.domainJoin) ends a run
# with the report's errorClass RebootRequired; the machine reboots (Windows
# Setup does it when this runs in its specialize pass), the task runs
# bootstrap again, which resumes after the join, and the task removes
# itself once bootstrap succeeds. At most 3 reboots are made.
# Exit code 3: another run holds machineadm's lock; the report is its own.
$resume = Join-Path $specDir 'resume.ps1'
$body = @'
param([switch]$NoReboot)
$Agent = @AGENT@
$Spec = @SPEC@
$Report = @REPORT@
$Count = Join-Path (Split-Path -Parent $Spec) 'reboots'
Write-Host "machineadm-stub: running $Agent bootstrap -f $Spec"
& $Agent bootstrap -f $Spec
$code = $LASTEXITCODE
if ($code -eq 3) { Write-Host 'machineadm-stub: another machineadm run is in progress (exit 3)'; exit $code }
if ($code -eq 0) {
	Unregister-ScheduledTask -TaskName 'machineadm-bootstrap' -Confirm:$false -ErrorAction SilentlyContinue
	exit 0
}
$class = ''
try { $class = (Get-Content -Raw -LiteralPath $Report | ConvertFrom-Json).errorClass } catch { }
if ($class -ne 'RebootRequired') { exit $code }
$n = 0
if (Test-Path -LiteralPath $Count) { $n = [int](Get-Content -LiteralPath $Count) }
if ($n -ge 3) { Write-Host 'machineadm-stub: still RebootRequired after 3 reboots'; exit $code }
Set-Content -LiteralPath $Count -Value ($n + 1)
if ($NoReboot) { Write-Host 'machineadm-stub: reboot required; bootstrap runs again at the next boot'; exit 0 }
Write-Host 'machineadm-stub: reboot required; rebooting, bootstrap runs again at the next boot'
Restart-Computer -Force
exit 0
'@
# Each value is quoted as a verbatim string: every character PowerShell
# takes as a single quote (the apostrophe and U+2018..U+201B) is doubled.
$q = { param($v) "'" + ($v -replace '[''\u2018\u2019\u201a\u201b]', '$0$0') + "'" }
$body = $body.Replace('@AGENT@', (& $q $AgentPath)).Replace('@SPEC@', (& $q $SpecPath)).Replace('@REPORT@', (& $q $ReportPath))
Set-Content -Encoding UTF8 -LiteralPath $resume -Value $body
$action = New-ScheduledTaskAction -Execute 'powershell.exe' -Argument "-NoProfile -ExecutionPolicy Bypass -File `"$resume`""
$trigger = New-ScheduledTaskTrigger -AtStartup
Register-ScheduledTask -Force -TaskName 'machineadm-bootstrap' -Action $action -Trigger $trigger -User 'SYSTEM' -RunLevel Highest | Out-Null
$inSetup = (Get-ItemProperty -Path 'HKLM:\SYSTEM\Setup' -ErrorAction SilentlyContinue).SystemSetupInProgress -eq 1
if ($inSetup) { & $resume -NoReboot } else { & $resume }
exit $LASTEXITCODE
