@echo off
rem Sets up .venv inside the repo (Windows). Idempotent. "scripts\setup.bat --dev" adds the test tools.
setlocal
cd /d "%~dp0\.."
if not exist .venv\Scripts\python.exe (
  echo setup: creating .venv
  py -3 -m venv .venv || python -m venv .venv || exit /b 1
)
set VPY=.venv\Scripts\python.exe
%VPY% -c "import torch" >nul 2>&1
if errorlevel 1 (
  echo setup: installing torch 2.13.0. PyPI's Windows build is CPU-only; for your RTX GPU see README "Windows and CUDA".
  %VPY% -m pip install -q "torch==2.13.0" || exit /b 1
)
%VPY% -m pip install -q -r requirements.txt || exit /b 1
%VPY% -m pip install -q --no-deps "open-clip-torch==3.3.0" || exit /b 1
if "%1"=="--dev" %VPY% -m pip install -q -r requirements-dev.txt || exit /b 1
exit /b 0
